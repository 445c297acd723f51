@consumer
Feature: Consumer obligations — "A contract that only constrains the producer is half a contract"
  Our own contract client (and the `li mcp` server built on it) is a consumer of `li`, and it
  holds every obligation ADR-0106 places on one, including those about answers the producer
  rarely emits.

  Rule: C1 — Validate contract_version on every envelope before decoding data

    @C1
    Scenario: A handshake at a version the consumer does not understand registers no verb
      Given li answers the handshake at contract_version 2
      When the consumer starts up
      Then the consumer registers no verb
      And a status read is answered "unregistered" without running li

    @C1
    Scenario: A v2 envelope after a v1 handshake degrades the consumer instead of being decoded
      Given the consumer has registered against li at contract_version 1
      And li now answers at contract_version 2 that the run succeeded
      When the consumer reads the run's status
      Then the surface is reported "degraded"
      And no data is decoded
      And the next status read is "degraded" until a handshake succeeds again

  Rule: C2 — Ignore unrecognised fields

    @C2
    Scenario: Fields the consumer has never seen change nothing it believes
      Given the consumer has registered against li at contract_version 1
      And li answers that the run succeeded, beside fields the consumer does not know
      When the consumer reads the run's status
      Then the surface is reported "ok"
      And the run's branch is "succeeded"

  Rule: C3 — Never map status onto a local set

    @C3
    Scenario Outline: Status is shown verbatim and never decides the branch
      Given the consumer has registered against li at contract_version 1
      And li answers status "<status>" with terminal <terminal> and outcome <outcome>
      When the consumer reads the run's status
      Then the run's status is shown as "<status>"
      And the run's branch is "<branch>"

      Examples:
        | status             | terminal | outcome  | branch    |
        | completed_empty    | true     | "failed" | failed    |
        | completed          | true     | "failed" | failed    |
        | timed_out          | true     | "failed" | failed    |
        | paused_by_operator | false    | null     | not_ended |
        | exited             | false    | null     | not_ended |

  Rule: C4 — Branch on outcome totally

    @C4
    Scenario Outline: Every outcome, including one outside the vocabulary, has a defined branch
      Given the consumer has registered against li at contract_version 1
      And li answers status "whatever" with terminal <terminal> and outcome <outcome>
      When the consumer reads the run's status
      Then the run's branch is "<branch>"

      Examples:
        | terminal | outcome         | branch        |
        | false    | null            | not_ended     |
        | true     | "succeeded"     | succeeded     |
        | true     | "failed"        | failed        |
        | true     | "cancelled"     | cancelled     |
        | true     | "indeterminate" | indeterminate |
        | true     | "partly_done"   | indeterminate |
        | true     | null            | indeterminate |

  Rule: C5 — Never render available: false as "none"

    @C5
    Scenario: An artifacts listing that could not be read is unknown, not empty
      Given the consumer has registered against li at contract_version 1
      And li answers the run's output with its artifacts unavailable as "unreadable"
      When the consumer reads the run's output
      Then the artifacts are described as unknown, citing "unreadable"
      And the artifacts are not described as none

    @C5
    Scenario: An artifacts listing that was read and is empty definitively means none
      Given the consumer has registered against li at contract_version 1
      And li answers the run's output with an available, empty artifacts listing
      When the consumer reads the run's output
      Then the artifacts are described as none

  Rule: C6 — Check the exit status before parsing stdout, and do not parse it at all on 78

    @C6
    Scenario: Exit 78 is an environment fault whatever stdout holds
      Given the consumer has registered against li at contract_version 1
      And li exits 78 with an envelope saying the run succeeded on stdout
      When the consumer reads the run's status
      Then the surface is reported "environment_fault"
      And no data is decoded
      And nothing is attributed to the run

    @C6
    Scenario Outline: Any other exit without a valid envelope is a transport fault
      Given the consumer has registered against li at contract_version 1
      And li exits <code> with stdout <stdout>
      When the consumer reads the run's status
      Then the surface is reported "transport_fault"
      And nothing is attributed to the run

      Examples:
        | code | stdout          |
        | -9   | "{\"ok\": tr"   |
        | 0    | "not json"      |
        | 1    | ""              |
        | 2    | "usage: li ..." |

    @C6
    Scenario: A valid envelope is authoritative whatever the exit status
      Given the consumer has registered against li at contract_version 1
      And li exits 1 with an envelope saying the run succeeded on stdout
      When the consumer reads the run's status
      Then the surface is reported "ok"
      And the run's branch is "succeeded"

  Rule: C7 — Never treat a terminal notice as proof, or as the only discovery path

    @C7
    Scenario: A notice that claims success is confirmed by reading the run's state
      Given the consumer has registered against li at contract_version 1
      And li's recorded state says the run ended with outcome "failed"
      When a notice arrives saying the run "succeeded"
      Then the consumer has read the run's status from li
      And the run's branch is "failed"

    @C7
    Scenario: A run whose notice never arrives is still discovered by waiting
      Given the consumer has registered against li at contract_version 1
      And li's wait reports the run ended with outcome "succeeded"
      When the consumer waits for the run without any notice
      Then the run's branch is "succeeded"

  Rule: C8 — Have a defined policy for a run a bounded wait does not resolve

    @C8
    Scenario Outline: A run that keeps coming back unresolved is abandoned after the policy's attempts
      Given the consumer gives up after 3 attempts, backing off from 1 second
      And the consumer has registered against li at contract_version 1
      And li's wait keeps returning the run in <bucket>
      When the consumer settles the run
      Then the run is reported abandoned after 3 attempts
      And the consumer backed off <pauses> seconds between attempts

      Examples:
        | bucket                         | pauses |
        | stopped_without_end            | 1, 2   |
        | unresolved_spawn               | 1, 2   |
        | pending when the window closes | none   |

    @C8
    Scenario: A run that records its end before the limit is reported by its outcome, not abandoned
      Given the consumer gives up after 3 attempts, backing off from 1 second
      And the consumer has registered against li at contract_version 1
      And li's wait returns the run in stopped_without_end, then ended with outcome "cancelled"
      When the consumer settles the run
      Then the run is not abandoned
      And the run's branch is "cancelled"
