@D4
Feature: D4 — status is opaque; terminal and outcome are the producer's derivations
  status is recorded and shown verbatim; whether to stop waiting (terminal) and whether the work
  came out right (outcome) are derived by the producer from the recorded end, and travel with
  status on every status-bearing answer.

  Rule: D4.1 — status is an open vocabulary, recorded and displayed verbatim

    @D4.1
    Scenario Outline: An ended run's status is reported exactly as recorded, whatever it is
      Given a run "r" that ended with status "<status>" and no recorded outcome
      When the status answer for "r" is read
      Then the status answer says status "<status>", terminal true, outcome <outcome>

      Examples:
        | status      | outcome       |
        | completed   | succeeded     |
        | timed_out   | failed        |
        | aborted     | cancelled     |
        | reticulated | indeterminate |

  Rule: D4.2 — terminal comes from a recorded end only, never from a status name or a reader

    @D4.2
    Scenario: A record that only says "completed" without an end is not terminal
      Given a run "r" whose status says "completed" but records no end, its process alive
      When the status answer for "r" is read
      Then the status answer says status "completed", terminal false, outcome null

    @D4.2
    Scenario: A producer-written spawn failure is a recorded end
      Given a run "r" that is spawn failed
      When the status answer for "r" is read
      Then the status answer says status "failed", terminal true, outcome "failed"

  Rule: D4.3 — outcome is closed, and null whenever terminal is false

    @D4.3
    Scenario Outline: A non-terminal run never carries an outcome
      Given a run "r" that is <state>
      When the status answer for "r" is read
      Then the status answer says terminal false and outcome null

      Examples:
        | state                               |
        | running                             |
        | gone, identity unrecorded           |
        | preparing, submitted 30 seconds ago |
        | queued, waiting for a slot          |
        | waiting for another run             |

    @D4.3
    Scenario: A run waiting for the runs it was submitted after is waiting, not terminal and carries no outcome
      Given a run "r" that is waiting for another run
      When the status answer for "r" is read
      Then the status answer says status "waiting", terminal false, outcome null
      And the status answer says alive true and possibly orphaned false

    @D4.3 @D4.6
    Scenario: A run whose dependency ended otherwise than asked is terminal and cancelled, dependency_failed
      Given a run "r" that is ended unstarted, its dependency failed
      When the status answer for "r" is read
      Then the status answer says status "cancelled", terminal true, outcome "cancelled"
      And the status answer's reason_code is "dependency_failed"

    @D4.3
    Scenario: A run waiting for its queue's slot is queued, not terminal and carries no outcome
      Given a run "r" that is queued, waiting for a slot
      When the status answer for "r" is read
      Then the status answer says status "queued", terminal false, outcome null
      And the status answer says alive true and possibly orphaned false

    @D4.3
    Scenario: A run whose agent waits for a person's approval is waiting_approval, not terminal, no outcome
      Given a run "r" that is waiting for a person's approval
      When the status answer for "r" is read
      Then the status answer says status "waiting_approval", terminal false, outcome null
      And the status answer says alive true and possibly orphaned false

  Rule: D4.4 — both are needed: completed_empty is terminal and failed

    @D4.4
    Scenario: completed_empty ended, and did not come out right
      Given a run "r" that ended with status "completed_empty", outcome "failed" and reason "no_artifacts"
      When the status answer for "r" is read
      Then the status answer says status "completed_empty", terminal true, outcome "failed"
      And the status answer's reason_code is "no_artifacts"

  Rule: D4.5 — indeterminate is the outcome of a run that ended with a result nobody can establish

    @D4.5
    Scenario: A started run whose recorded process is conclusively gone is reaped indeterminate
      Given a run "r" that is gone
      When the status answer for "r" is read
      Then the status answer says status "exited", terminal true, outcome "indeterminate"
      And the status answer's reason_code is "process_gone_without_outcome"

  Rule: D4.6 — reason_code is advisory; outcome never needs it

    @D4.6
    Scenario: The same outcome with and without a reason code
      Given a run "a" that ended with status "failed", outcome "failed" and reason "exit_3"
      And a run "b" that ended with status "failed" and no recorded outcome
      When the status answers for "a" and "b" are read
      Then both status answers say outcome "failed"
      And the status answer of "b" has reason_code null

    @D4.6 @cli
    Scenario Outline: A vendor's mislabelled end is never a success, and its reason names the failure
      Given an agent CLI "<cli>" that replays its recorded "<case>" stream and exit
      When li runs an agent on it and the run ends
      Then the run ended with status "failed", outcome "failed" and reason "<reason>"
      And the run has no response.md

      Examples:
        | cli    | case         | reason                |
        | claude | rate_limited | provider_rate_limited |
        | claude | auth         | provider_auth         |
        | gemini | untrusted    | provider_refused      |
        | codex  | auth         | provider_auth         |

    @D4.6 @cli
    Scenario Outline: An agent that exits 0 with an empty answer and nothing else ended, and did not come out right
      Given an agent CLI "<cli>" that replays its recorded "empty" stream and exit
      When li runs an agent on it and the run ends
      Then the run ended with status "completed_empty", outcome "failed" and reason "empty_answer"
      And the run has no response.md

      Examples:
        | cli    |
        | claude |
        | codex  |
        | gemini |

    @D4.6 @cli
    Scenario: A Claude result that says success with is_error and exits 0 is a failure
      Given an agent CLI "claude" that replays its recorded "rate_limited" stream and exits 0
      When li runs an agent on it and the run ends
      Then the run ended with status "failed", outcome "failed" and reason "provider_rate_limited"
      And the run has no response.md

    @D4.6 @cli
    Scenario: A run its token budget stops ended failed, with budget_exceeded and what it spent
      Given an agent CLI "claude" that replays its recorded "tool" stream slowly
      When li runs an agent on it with "--max-tokens 20" and the run ends
      Then the run ended with status "failed", outcome "failed" and reason "budget_exceeded"
      And the run's budget says 26 tokens spent of 20, the tokens limit exceeded
      And the run has no response.md

    @D4.6 @cli
    Scenario: A Gemini run whose stream carries no result and that exits 0 is a failure
      Given an agent CLI "gemini" that replays its recorded "refused" stream and exits 0
      When li runs an agent on it and the run ends
      Then the run ended with status "failed", outcome "failed" and reason "provider_error"
      And the run has no response.md

    @D4.6 @cli
    Scenario: A Codex run that retried and then answered is a success
      Given an agent CLI "codex" that replays its recorded "transient" stream and exit
      When li runs an agent on it and the run ends
      Then the run ended with status "completed", outcome "succeeded" and no reason

    @D4.6
    Scenario Outline: Where the work's processes ran is said beside the outcome, in li's own words only
      Given a run "r" that ended succeeded with its processes recorded as "<recorded>"
      When the status answer for "r" is read
      Then the status answer says processes <shown> and outcome "succeeded"

      Examples:
        | recorded      | shown           |
        | pid_namespace | "pid_namespace" |
        | shared        | "shared"        |
        | elsewhere     | null            |

    @D4.6 @cli
    Scenario: A run li starts says where its work's processes ran, and why when they shared the host's
      When li runs the shell work "true" and the run ends
      Then the run's status says processes "pid_namespace" or "shared", with a detail only for "shared"

    @D4.6
    Scenario Outline: The shared git files a work changed are named beside the outcome
      Given a run "r" that ended succeeded with repository changes <recorded>
      When the status answer for "r" is read
      Then the status answer says repository_changes <shown> and outcome "succeeded"

      Examples:
        | recorded                   | shown                      |
        | ["config", "hooks/pre-commit"] | ["config", "hooks/pre-commit"] |
        | []                         | []                         |
        | null                       | null                       |

  Rule: D4.7 — alive reports liveness at read time and is advisory

    @D4.7
    Scenario: A completed run whose pid now names another live process is not alive, and still succeeded
      Given a run "r" that completed while its pid now names another live process
      When the status answer for "r" is read
      Then the status answer says status "completed", terminal true, outcome "succeeded"
      And the status answer says alive false

    @D4.7
    Scenario: A running run's live process is reported alive
      Given a run "r" that is running
      When the status answer for "r" is read
      Then the status answer says alive true

  Rule: D4.8 — every status-bearing response carries status, terminal and outcome

    @D4.8
    Scenario: status, list rows and the kill answer each carry the three
      Given a run "r" that ended with status "timed_out" and no recorded outcome
      When the status answer for "r" is read
      And the list answer is read
      And the kill answer for "r" is asked
      Then the status answer, every list row and the kill answer carry status, terminal and outcome
