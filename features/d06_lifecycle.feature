@D6
Feature: D6 — One lifecycle authority; liveness is advisory beside it
  The persisted record settles the lifecycle; liveness is probed, reported as `alive`, and never
  overrides or establishes an end.

  Rule: D6.1 — durable lifecycle state is authoritative; a consumer restart changes nothing

    @D6.1
    Scenario: A reader that starts afresh gives the same answer about the same record
      Given a run "r" that ended with status "completed" and no recorded outcome
      When the status answer for "r" is read
      Then a fresh reader over the same store gives the same status answer for "r"

  Rule: D6.2 — liveness is advisory and never overrides a recorded end

    @D6.2 @cli
    Scenario: A run stopped by its budget is ended by its runner, and nothing of its work lives on
      Given an agent CLI "claude" that replays its recorded "tool" stream slowly
      When li runs an agent on it with "--max-tokens 20" and the run ends
      Then the run's end was written by its runner, and nothing of its work is left

    @D6.2
    Scenario: A recorded end stands while the recorded process still lives
      Given a run "r" that ended with status "failed" while its recorded process still lives
      When the status answer for "r" is read
      Then the status answer says status "failed", terminal true, outcome "failed"
      And the status answer says alive true

  Rule: D6.3 — a started run gone with no end is an orphan: exited, non-terminal, possibly orphaned

    @D6.3
    Scenario: An orphan with inconclusive evidence reads exited and possibly orphaned
      Given a run "r" that is gone, identity unrecorded
      When the status answer for "r" is read
      Then the status answer says status "exited", terminal false, outcome null
      And the status answer says alive false and possibly orphaned true

    @D6.3
    Scenario: A run whose runner is gone while its work still runs is not an orphan
      Given a run "r" that is gone, its work still running
      When the status answer for "r" is read
      Then the status answer says status "running", terminal false, outcome null
      And the status answer says alive true and possibly orphaned false
      And the stored record of "r" is exactly as it was written

    @D6.3
    Scenario: A queued run whose runner is gone is reaped like any other orphan, never as a success
      Given a run "r" that is queued, its runner gone
      When the status answer for "r" is read
      Then the status answer says status "exited", terminal true, outcome "indeterminate"

    @D6.3
    Scenario: A waiting run whose runner is gone gets a new runner and stays waiting, never reaped
      Given a run "r" that is waiting for another run, its runner gone
      When the status answer for "r" is read
      Then the status answer says status "waiting", terminal false, outcome null
      And the status answer says alive true and possibly orphaned false

    @D6.3
    Scenario: A waiting run asked to stop whose runner is gone is reaped cancelled
      Given a run "r" that is waiting for another run, its runner gone
      And a kill request is recorded for "r"
      When the status answer for "r" is read
      Then the status answer says status "cancelled", terminal true, outcome "cancelled"

    @D6.3
    Scenario: A run waiting for approval whose runner is gone is reaped like any other orphan
      Given a run "r" that is waiting for approval, its runner gone
      When the status answer for "r" is read
      Then the status answer says status "exited", terminal true, outcome "indeterminate"

    @D6.3 @cli
    Scenario: A real run whose process group is SIGKILLed reads exited until something reaps it
      Given a real detached process recorded as a started run without its identity
      When its process group is killed with SIGKILL
      Then li job status reports it exited, non-terminal, not alive and possibly orphaned

  Rule: D6.4 — liveness is never the fact that establishes terminality

    @D6.4
    Scenario: A bare pid probe never ends a run, however often it is read
      Given a run "r" that is gone, identity unrecorded
      When the status answer for "r" is read 3 times
      Then every one of those status answers says terminal false

  Rule: D6.5 — without a conclusive published reap, an orphan or a preparing record stays non-terminal

    @D6.5
    Scenario: An old preparing record is flagged, aged, and still not terminal
      Given a run "r" that is preparing, submitted 3600 seconds ago
      When the status answer for "r" is read
      Then the status answer says terminal false and outcome null
      And the status answer says possibly orphaned true with age 3600 seconds

  Rule: D6.6 — no reader-side rule terminalises a run

    @D6.6
    Scenario: Reading an orphan through every read verb leaves its record exactly as it was
      Given a run "r" that is gone, identity unrecorded
      When the status answer for "r" is read
      And the output answer for "r" is read
      And the list answer is read
      Then the stored record of "r" is exactly as it was written

  Rule: D6.7 — a false pending is accepted over a false terminal

    @D6.7
    Scenario: A process that may not be inspected leaves the run non-terminal and not called exited
      Given a run "r" that is not inspectable
      When the status answer for "r" is read
      Then the status answer says status "running", terminal false, outcome null
      And the status answer says alive null and possibly orphaned true

  Rule: D6.8 — kill signals the whole process group and reports what it did

    @D6.8
    Scenario: A live run's group is signalled and the request recorded
      Given a run "r" that is running
      When the kill answer for "r" is asked
      Then the kill answer's action is "signalled"
      And the run's process group received SIGTERM
      And the stored record of "r" carries the kill request

    @D6.8
    Scenario: An ended run is already terminal, and the kill changes nothing
      Given a run "r" that ended with status "completed" and no recorded outcome
      When the kill answer for "r" is asked
      Then the kill answer's action is "already_terminal"
      And no signal was sent
      And the stored record of "r" is exactly as it was written

    @D6.8
    Scenario: A pid that now names another process is never signalled
      Given a run "r" that is gone, its pid reused
      When the kill answer for "r" is asked
      Then the kill answer's action is "no_process"
      And no signal was sent

    @D6.8
    Scenario: Work that outlives its runner is still the run's, and the kill signals it
      Given a run "r" that is gone, its work still running
      When the kill answer for "r" is asked
      Then the kill answer's action is "signalled"
      And every process of the run's work received SIGTERM
      And the stored record of "r" carries the kill request

    @D6.8
    Scenario: A kill that finds nothing of the run alive records nothing, so the run is not called cancelled
      Given a run "r" that is gone
      When the kill answer for "r" is asked
      Then the kill answer's action is "no_process"
      And no signal was sent
      And the kill answer says status "exited", terminal true, outcome "indeterminate"

    @D6.8 @cli
    Scenario: A real run whose runner alone is SIGKILLed lives on in its work, until the kill reaches it
      Given li submitted a run whose work is still running
      When only the run's runner is killed with SIGKILL
      Then li job status reports it non-terminal and alive
      When li job kill is asked for it
      Then li answers that it signalled the run, and nothing of its work is left
      And the work never finished, and li job status reports the run cancelled

    @D6.8 @cli
    Scenario: A real run's whole group dies of the kill
      Given a real detached process group recorded as a started run with its identity
      When li job kill is asked for it
      Then li answers that it signalled the group, and every process of the group is gone

  Rule: D6.9 — list is newest first, bounded by limit, and says when truncated

    @D6.9
    Scenario: The newest runs come first, and the answer says more exist
      Given 5 runs submitted a second apart
      When the list answer is read with limit 3
      Then the list answer holds the 3 newest runs, newest first, and is truncated

    @D6.9
    Scenario: An unreadable record is a row that says so and the listing goes on
      Given 2 runs submitted a second apart
      And a run "bad" whose record is corrupt
      When the list answer is read
      Then the list answer holds 3 rows
      And the list row of "bad" says unavailable with reason "malformed" and null lifecycle fields
