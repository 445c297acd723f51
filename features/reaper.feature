@reaper
Feature: The fenced orphan reaper — "DEFERRED: the orphan reconciler", as ADR-0107 built it
  A started run whose process is conclusively gone, with no end recorded, is reaped by the
  first reader that observes it: an attributable terminal with outcome indeterminate, written
  under a fenced compare-and-set. Everything weaker than conclusive evidence leaves the run
  non-terminal, because a false pending is accepted and a false terminal is not.

  Rule: R1 — Incarnation identity is recorded at spawn, and it is what the reaper judges

    @R1 @cli
    Scenario: A submitted run records host id, boot id, pid, create time and process group
      Given li submitted a run that is still working
      Then its record carries the incarnation of its live process on this host and boot

    @R1
    Scenario: The evidence a reap publishes is the recorded incarnation against what was observed
      Given a run that is gone
      When a reader observes the run
      Then the published end names the finding "pid_absent" and is an upper bound

  Rule: R2 — Only a conclusive finding may lead to a terminal

    @R2
    Scenario: A recorded process that is gone is reaped as indeterminate
      Given a run that is gone
      When a reader observes the run
      Then the run is terminal with outcome "indeterminate" and reason "process_gone_without_outcome"
      And the published end names the finding "pid_absent" and is an upper bound

    @R2
    Scenario: A reused pid is reaped as recycled
      Given a run that is gone, its pid reused
      When a reader observes the run
      Then the run is terminal with outcome "indeterminate" and reason "process_gone_pid_recycled"

    @R2
    Scenario: A live process with the recorded create time is never reaped
      Given a run that is running
      When a reader observes the run
      Then the run is not terminal
      And the run is not called stopped
      And the record is exactly as it was

    @R2
    Scenario: A gone runner whose work still runs in its session is never reaped
      Given a run that is gone, its work still running
      When a reader observes the run
      Then the finding is "session_alive"
      And the run is not terminal
      And the run is not called stopped
      And the record is exactly as it was

    @R2
    Scenario: A zombie of ours is reaped
      Given a run that is a zombie
      When a reader observes the run
      Then the run is terminal with outcome "indeterminate" and reason "process_gone_zombie"

    @R2
    Scenario: A run recorded before the host rebooted is reaped
      Given a run that is recorded before a reboot
      When a reader observes the run
      Then the run is terminal with outcome "indeterminate" and reason "process_gone_host_rebooted"

    @R2
    Scenario: A kill that was requested makes the reaped outcome cancelled
      Given a run that is gone after a kill request
      When a reader observes the run
      Then the run is terminal with outcome "cancelled" and reason "process_gone_without_outcome"

    @R2
    Scenario: Access denied is not evidence of death
      Given a run that is not inspectable
      When a reader observes the run
      Then the finding is "access_denied"
      And the run is not terminal
      And the run is called stopped without an end
      And the record is exactly as it was

    @R2
    Scenario: A record written before identity existed is never reaped
      Given a run that is gone, identity unrecorded
      When a reader observes the run
      Then the finding is "identity_not_recorded"
      And the run is not terminal
      And the run is called stopped without an end
      And the record is exactly as it was

  Rule: R3 — The reap is a fenced compare-and-set, published once, by the first reader

    @R3
    Scenario: Many readers of one orphan publish exactly one reap
      Given a run that is gone
      When 8 readers observe the run one after another
      Then the run is terminal with outcome "indeterminate" and reason "process_gone_without_outcome"
      And exactly one reap was published, in one generation increment

    @R3
    Scenario: A stalled reaper publishes nothing over a real end
      Given a run that is gone
      And the reaper stalls after judging while the runner records a real end
      When a reader observes the run
      Then the run's real end stands
      And the record's generation moved by exactly 1

    @R3
    Scenario: A refused lock leaves the record untouched and the next observation retries
      Given a run that is gone
      And the run's lock is held by someone else for the next observation
      When a reader observes the run
      Then the run is not terminal
      And the run is called stopped without an end
      And the record is exactly as it was
      When a reader observes the run again
      Then the run is terminal with outcome "indeterminate" and reason "process_gone_without_outcome"

    @R3
    Scenario: A refused write leaves the record untouched
      Given a run that is gone
      And the store refuses the next write
      When a reader observes the run
      Then the run is not terminal
      And the record is exactly as it was

  Rule: R4 — A reader never reaps, and never calls stopped, a record of another host

    @R4
    Scenario: A record copied in from another host is neither reaped nor called stopped
      Given a run that is started on another host
      When a reader observes the run
      Then the finding is "foreign_host"
      And the run is not terminal
      And the run is not called stopped
      And the record is exactly as it was

  Rule: R5 — A preparing record is never reaped

    @R5
    Scenario: A fresh preparing record stays pending
      Given a run that is preparing, submitted 5 seconds ago
      When a reader observes the run
      Then the run is pending
      And the record is exactly as it was

    @R5
    Scenario: An aged preparing record surfaces as an unresolved spawn and is not reaped
      Given a run that is preparing, submitted 601 seconds ago
      When a reader observes the run
      Then the run is an unresolved spawn
      And the record is exactly as it was

    @R5
    Scenario: A preparing record with a vanished pid is still not reaped
      Given a run that is preparing, its recorded pid gone
      When a reader observes the run
      Then the run is not terminal
      And the record is exactly as it was

  Rule: R6 — The reap winner, and only the winner, attempts the configured terminal notice
    (D9.2's scenarios in d09_notify.feature carry this id too: one reader of many sends the notice,
    an inconclusive orphan sends none.)

    @R6
    Scenario: A reap that finds the run's lock held sends no notice
      Given a run that is gone
      And a terminal notice is configured for the run
      And the run's lock is held by someone else for the next observation
      When a reader observes the run
      Then exactly 0 terminal notices were sent

    @R6
    Scenario: A stalled reaper that loses to the real end sends no notice
      Given a run that is gone
      And a terminal notice is configured for the run
      And the reaper stalls after judging while the runner records a real end
      When a reader observes the run
      Then exactly 0 terminal notices were sent
