@D9
Feature: D9 — "A notification is a prompt to read state, never proof and never the only path"
  On reaching a terminal status a run records that status and, when a delivery command is
  configured, sends a terminal notice: the configured argv (never a shell) with the JSON
  payload on stdin, in its own process group, under a timeout. Whoever recorded the end sends
  it — the runner, or the reader whose fenced reap published — and nobody else.

  Rule: D9.1 — The notice carries no authority: it says "go read the state"

    @D9.1
    Scenario: The notice names the run, and the state it points at is already the answer
      Given a run that recorded its end as "completed" with a notice configured
      When whoever recorded the end sends the notice
      Then the notice says only which run to go and read, and a status read agrees with it
      And the end was on record before the notice command ran

    @D9.1
    Scenario: A failed delivery changes nothing about the run it was about
      Given a run that recorded its end as "completed" with a notice configured
      And the notice command will fail with "nonzero_exit"
      When whoever recorded the end sends the notice
      Then the run's own end is unchanged by the delivery

  Rule: D9.2 — Never the only path: the reap winner sends the dead child's notice, nobody else does

    @D9.2 @R6
    Scenario: An orphan reaped by one of many readers produces exactly one notice
      Given a run that is gone
      And a terminal notice is configured for the run
      When 8 readers observe the run one after another
      Then exactly 1 terminal notice was sent
      And the notice carries the reaped terminal

    @D9.2
    Scenario: A reap that could not publish sends no notice
      Given a run that is gone
      And a terminal notice is configured for the run
      And the store refuses the next write
      When a reader observes the run
      Then exactly 0 terminal notices were sent

    @D9.2
    Scenario: A preparing orphan never resolves and sends no notice
      Given a run that is preparing, submitted 601 seconds ago
      And a terminal notice is configured for the run
      When a reader observes the run
      Then exactly 0 terminal notices were sent
      And the run is an unresolved spawn

    @D9.2 @R6
    Scenario: An inconclusive orphan sends no notice
      Given a run that is not inspectable
      And a terminal notice is configured for the run
      When a reader observes the run
      Then exactly 0 terminal notices were sent
      And the run is called stopped without an end

  Rule: D9.3 — The delivery outcome is recorded; attempted: false means none was configured

    @D9.3
    Scenario: A delivered notice is recorded as attempted and succeeded
      Given a run that recorded its end as "completed" with a notice configured
      When whoever recorded the end sends the notice
      Then the recorded delivery is attempted and succeeded

    @D9.3
    Scenario Outline: Each failing delivery leaves its own recorded outcome
      Given a run that recorded its end as "completed" with a notice configured
      And the notice command will fail with "<failure_class>"
      When whoever recorded the end sends the notice
      Then the recorded delivery is attempted and failed with "<failure_class>"
      And the run's own end is unchanged by the delivery

      Examples:
        | failure_class     |
        | nonzero_exit      |
        | command_not_found |
        | permission_denied |
        | timeout           |
        | signalled         |
        | unknown           |

    @D9.3
    Scenario: Nothing configured is a valid configuration, recorded as not attempted
      Given a run that recorded its end with no notice configured
      When whoever recorded the end sends the notice
      Then no notice command ran
      And the recorded delivery is not attempted

  Rule: D9.4 — Artifacts are written before the notice is sent

    @D9.4 @cli
    Scenario: A consumer woken by the notice finds the outputs and a terminal status already there
      Given li ran a run that writes an artifact, with a notice command that looks around when it runs
      When the notice has been delivered
      Then the notice command found the run's artifact already written
      And the notice command found li job status already reporting the run terminal
