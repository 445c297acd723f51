@D5
Feature: D5 — "Submit returns a handle, and the spawn phase is recorded"
  `li agent`, `li orchestrate flow` and `li orchestrate fanout` under --machine --detach
  return a handle as soon as the detached child exists. Everything that can be refused is
  refused before anything reaches disk; what cannot be prevented — a spawn failing after
  validation — is recorded by the producer as a terminal failure, never left for a reader
  to infer.

  Rule: D5.1 — Submit returns as soon as the child is spawned; it reports nothing about the work

    @D5.1 @cli
    Scenario: A detached submit answers with a handle while the work is still going
      When a program submits the shell work "sleep 2; echo done" detached through li
      Then the submit answer is a handle: run id, pid, status "running", terminal false, outcome null and the console path
      And the submitted run has not recorded an end yet

    @D5.1
    Scenario: The handle carries nothing about the work itself
      When li submits a run
      Then the handle carries only run_id, pid, status, terminal, outcome, log and replayed

  Rule: D5.2 — run_id is assigned before the child starts

    @D5.2
    Scenario: The child is started with a run id that already names a record
      When a run is submitted while its spawn is watched
      Then at the moment of the spawn the run id already named a record
      And the child was started with that run id as its last argument

  Rule: D5.3 — The child is fully detached, in-process, without a setsid executable

    @D5.3 @cli
    Scenario: The run survives the death of the submitting process and of its parent shell
      When a shell submits a run through li and is then killed with its whole process group
      Then the submitted run still completes and writes its artifact

    @D5.3 @cli
    Scenario: The child leads its own session and its stdin is closed
      When a program submits the shell work that reports its session and stdin detached through li
      Then the run's process leads its own session and its stdin is /dev/null

  Rule: D5.4 — Input validation happens before anything is created on disk

    @D5.4 @cli
    Scenario Outline: Bad input is refused as <kind> and leaves no run folder
      When a program submits with the arguments <arguments>
      Then the submit is refused with kind "<kind>"
      And no run folder exists

      Examples:
        | arguments                                      | kind          |
        | agent gpt-9 hello                              | invalid_input |
        | agent sh " "                                   | invalid_input |
        | agent sh --prompt-file /nonexistent/prompt.txt | invalid_input |
        | agent --timeout soon sh true                   | invalid_input |
        | agent --cwd /nonexistent/dir sh true           | invalid_input |
        | orchestrate fanout --legs 0 sh true            | invalid_input |
        | orchestrate fanout --legs 99999 sh true        | invalid_input |
        | orchestrate flow /nonexistent/flow.yaml        | invalid_input |

    @D5.4 @cli
    Scenario: A prompt over 256 KiB is refused before anything is written
      When a program submits a prompt file of 262145 bytes
      Then the submit is refused with kind "invalid_input"
      And no run folder exists

    @D5.4 @cli
    Scenario: An argument vector exec would refuse is refused before anything is written
      When a program submits with a configured notify command holding a 200 KiB argument
      Then the submit is refused with kind "invalid_input"
      And no run folder exists

    @D5.4 @cli
    Scenario: A prompt of 250 KiB is not limited by the argument vector
      When a program submits a shell script of 250 KiB as a prompt file
      Then the submitted run answers "ok"

    @D5.4 @cli
    Scenario: A flow spec with a dependency cycle is refused before anything is written
      When a program submits a flow whose steps depend on each other in a cycle
      Then the submit is refused with kind "invalid_input"
      And no run folder exists

    @D5.4 @cli
    Scenario: A provider whose executable is not installed is unavailable, and no run exists
      When a program submits work for codex on a PATH without a codex executable
      Then the submit is refused with kind "unavailable"
      And no run folder exists

    @D5.4 @D3.3 @cli
    Scenario: A cwd at or below the store, reached through a link, is refused before anything is written
      When a program submits with its cwd inside the store through a link
      Then the submit is refused: kind "invalid_input", reason "cwd_in_store"
      And no run folder exists

  Rule: D5.5 — Spawn failure after validation is unpreventable; the record is written before Popen

    @D5.5
    Scenario: The record exists before the spawn is attempted
      When a run is submitted while its spawn is watched
      Then at the moment of the spawn the record said spawn_state "preparing" with no pid

    @D5.5
    Scenario: A working directory that vanished after validation fails the spawn, not the validation
      Given the working directory will have vanished by the time of the spawn
      When a program submits a valid request
      Then the submit envelope is ok false with kind "unavailable" naming the run
      And that run's record is terminal with outcome "failed" and reason "spawn_failed"

  Rule: D5.6 — The spawn phase is recorded: preparing, then started or failed

    @D5.6
    Scenario: A started spawn records started with the pid and its incarnation in the same write
      When li submits a run
      Then the record says spawn_state "started" with the pid and its incarnation
      And the record was written twice: preparing, then started

    @D5.6
    Scenario: A failed spawn records failed and a terminal failure, and the envelope is ok false
      Given the spawn will fail with "PermissionError: the interpreter is not executable"
      When a program submits a valid request
      Then the submit envelope is ok false with kind "unavailable" naming the run
      And that run's record is terminal with outcome "failed" and reason "spawn_failed"
      And that run's record says spawn_state "failed"

  Rule: D5.7 — A reader never infers spawn failure from a missing pid

    @D5.7
    Scenario: A run read between the pre-spawn write and the pid attachment is pending
      When a run is submitted while its spawn is watched
      Then a status read taken during the spawn said status "running", not terminal, outcome null

  Rule: D5.8 — A stale preparing record is surfaced, never resolved

    @D5.8
    Scenario: A preparing record older than the threshold is flagged but stays non-terminal
      Given a run whose producer died after the pre-spawn write
      When 601 seconds pass and the run is read
      Then the run is not terminal, its outcome is null and it is flagged possibly orphaned
      And its record still says spawn_state "preparing"

  Rule: D5.9 — Readers derive presentation; only the lifecycle authority makes a transition

    @D5.9
    Scenario: Reading a submitted run never writes its record
      When li submits a run
      And the submitted run is read three times
      Then the submitted run's record generation is unchanged

  Rule: D5.10 — Long instruction text is passed in a file written before the spawn

    @D5.10
    Scenario: The instruction is on disk when the child is spawned
      When a run is submitted while its spawn is watched
      Then at the moment of the spawn instruction.txt already held the prompt

    @D5.10 @cli
    Scenario: Editing the prompt file after submit changes nothing the run executes
      Given a prompt file that says "echo original"
      When a program submits that prompt file detached through li
      And the prompt file is changed to "echo edited"
      Then the submitted run answers "original"

  Rule: Submit idempotency, the ADR's open question (Notes), answered by --idempotency-key

    @D5 @cli
    Scenario: A submit repeated under its idempotency key answers the first run and starts nothing
      When a program submits "sleep 1" with idempotency key "k-1" while its stdout refuses the envelope
      Then li exits 74 and exactly one run exists
      When the program submits "sleep 1" with idempotency key "k-1" again
      Then the answer names that run as replayed and exactly one run exists
      When the program submits "echo another" with idempotency key "k-1" again
      Then the answer is refused as conflict naming that run
