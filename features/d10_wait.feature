@D10
Feature: D10 — Bounded observation, shared with ADR-0066 D6, stated here in full
  wait takes ids, a maximum wait, and a poll interval; both numbers are clamped to documented
  bounds and the effective values are echoed back. 0 is a legal snapshot request.

  Rule: D10.1 — One entry per requested id, in input order, plus all_terminal, timed_out and the ids still pending

    @D10.1
    Scenario: A mixed batch answers one entry per requested position, in the order asked
      Given a wait batch on this host:
        | name  | state     |
        | done  | completed |
        | broke | failed    |
        | busy  | running   |
      When the caller waits on "broke, busy, done, broke" with max wait 0 and poll interval none
      Then the wait entries in order are:
        | name  | status    | terminal | outcome   | error |
        | broke | failed    | true     | failed    | -     |
        | busy  | running   | false    | -         | -     |
        | done  | completed | true     | succeeded | -     |
        | broke | failed    | true     | failed    | -     |
      And the wait partition is:
        | bucket              | names |
        | pending             | busy  |
        | stopped_without_end |       |
        | unresolved_spawn    |       |
      And all_terminal is false and timed_out is true
      And the wait answer has exactly the D10 wire shape

    @D10.1
    Scenario Outline: Both numbers are clamped to their bounds, and the effective and requested values are echoed
      Given a wait batch on this host:
        | name | state     |
        | done | completed |
      When the caller waits on "done" with max wait <max_wait> and poll interval <poll>
      Then the wait echoes max wait <effective_max> as <requested_max> and poll interval <effective_poll> as <requested_poll>

      Examples:
        | max_wait | poll  | effective_max | requested_max | effective_poll | requested_poll |
        | none     | none  | 60            | null          | 1              | null           |
        | 5        | 0.5   | 5             | 5             | 0.5            | 0.5            |
        | 9999     | 0.001 | 600           | 9999          | 0.05           | 0.001          |
        | -3       | 120   | 0             | -3            | 60             | 120            |
        | nan      | soon  | 0             | "nan"         | 0.05           | "soon"         |

  Rule: D10.2 — Expiry is not an error: a timed-out wait reports what it learned

    @D10.2
    Scenario: A window that closes on a running run keeps the ended ones and says the window closed
      Given a wait batch on this host:
        | name | state     |
        | done | completed |
        | busy | running   |
      When the caller waits on "done, busy" with max wait 3 and poll interval 1
      Then the wait entries in order are:
        | name | status    | terminal | outcome   | error |
        | done | completed | true     | succeeded | -     |
        | busy | running   | false    | -         | -     |
      And the wait partition is:
        | bucket  | names |
        | pending | busy  |
      And all_terminal is false and timed_out is true
      And the wait slept for 1 then 1 then 1 and observed 4 times
      And every record of the wait batch is exactly as it was

    @D10.2
    Scenario: A batch system that does not answer never stretches the window
      Given Slurm runs "a, b, c" whose controller takes all the time it is given and answers nothing
      When the caller waits on "a, b, c" with max wait 5 and poll interval 1
      Then the wait took at most 5 seconds
      And all_terminal is false and timed_out is true
      And every Slurm run is pending, judged cluster_unreachable

  Rule: D10.3 — Unknown or ambiguous ids are per-id errors that never stop the other ids being observed

    @D10.3
    Scenario: Unknown, malformed and unreadable ids are answered in place while the others are waited on
      Given a wait batch on this host:
        | name  | state     |
        | ghost | unknown   |
        | done  | completed |
        | typo  | malformed |
        | junk  | corrupt   |
        | busy  | running   |
      And "busy" records its end 2 seconds into the wait
      When the caller waits on "ghost, done, typo, junk, busy" with max wait 60 and poll interval 1
      Then the wait entries in order are:
        | name  | status    | terminal | outcome   | error           |
        | ghost | -         | -        | -         | not_found       |
        | done  | completed | true     | succeeded | -               |
        | typo  | -         | -        | -         | invalid_input   |
        | junk  | -         | -        | -         | record_unusable |
        | busy  | completed | true     | succeeded | -               |
      And the four buckets are disjoint and cover every id that was observed
      And all_terminal is false and timed_out is false
      And the wait slept for 1 then 1 and observed 3 times

  Rule: D10.4 — Lifecycle state is the single authority, whoever submitted the work

    @D10.4
    Scenario: A run submitted through another surface is answered from its record, not from what that surface noted
      Given a wait batch on this host:
        | name    | state                                  |
        | via-mcp | running, noted done by another surface |
        | via-cli | running                                |
      When the caller waits on "via-mcp, via-cli" with max wait 0 and poll interval none
      Then the wait entries in order are:
        | name    | status  | terminal | outcome | error |
        | via-mcp | running | false    | -       | -     |
        | via-cli | running | false    | -       | -     |
      And the wait partition is:
        | bucket  | names            |
        | pending | via-mcp, via-cli |

  Rule: D10.5 — It is the same authority status reads: no two verbs disagree about one run at one moment

    @D10.5
    Scenario: wait, status and list say the same of every run in a mixed batch
      Given a wait batch on this host:
        | name   | state                     |
        | done   | completed                 |
        | broke  | failed                    |
        | busy   | running                   |
        | lost   | gone, identity unrecorded |
        | reaped | gone                      |
        | stale  | aged preparing            |
        | young  | preparing                 |
        | ghost  | unknown                   |
        | typo   | malformed                 |
        | junk   | corrupt                   |
      When the caller waits on "done, broke, busy, lost, reaped, stale, young, ghost, typo, junk" with max wait 0 and poll interval none
      Then wait, status and list say the same of every run in the batch

  Rule: D10.6 — Observing does not touch the run, except the fenced reap of a conclusively gone started run

    @D10.6
    Scenario: A wait that times out leaves every run exactly as it was
      Given a wait batch on this host:
        | name  | state                     |
        | busy  | running                   |
        | lost  | gone, identity unrecorded |
        | stale | aged preparing            |
      When the caller waits on "busy, lost, stale" with max wait 2 and poll interval 1
      Then all_terminal is false and timed_out is true
      And every record of the wait batch is exactly as it was

    @D10.6
    Scenario: A wait stopped mid-sleep answers with what it had observed and leaves every run as it was
      Given a wait batch on this host:
        | name | state     |
        | done | completed |
        | busy | running   |
      When the caller waits on "done, busy" and is interrupted during sleep 2
      Then the wait entries in order are:
        | name | status    | terminal | outcome   | error |
        | done | completed | true     | succeeded | -     |
        | busy | running   | false    | -         | -     |
      And the wait slept for 1 then 1 and observed 2 times
      And every record of the wait batch is exactly as it was

    @D10.6
    Scenario: The first reader of a conclusively gone started run reaps it under a fence, and writes nothing else
      Given a wait batch on this host:
        | name   | state                     |
        | reaped | gone                      |
        | lost   | gone, identity unrecorded |
        | busy   | running                   |
      When the caller waits on "reaped, lost, busy" with max wait 0 and poll interval none
      Then the wait entries in order are:
        | name   | status  | terminal | outcome       | reason_code                  | error |
        | reaped | exited  | true     | indeterminate | process_gone_without_outcome | -     |
        | lost   | exited  | false    | -             | -                            | -     |
        | busy   | running | false    | -             | -                            | -     |
      And only "reaped" was written, by one fenced reap

    @D10.6 @cli
    Scenario Outline: A signal mid-wait still prints the envelope of what was observed, and the run is untouched
      Given a real run "sleeper" whose process keeps running
      When li waits on "sleeper" under --machine and receives <signal> mid-wait
      Then li still prints one envelope that reports "sleeper" pending
      And the real run "sleeper" is still running and its record is exactly as it was

      Examples:
        | signal  |
        | SIGINT  |
        | SIGTERM |

    @D10.6 @cli
    Scenario: A caller that disconnects (closed stdout) leaves the run as it was, and li does not crash
      Given a real run "sleeper" whose process keeps running
      When li waits on "sleeper" under --machine after its caller has gone away
      Then li exits 74, a transport fault without an envelope, and without a traceback
      And the real run "sleeper" is still running and its record is exactly as it was

  Rule: D10.7 — Every entry carries outcome as well as terminal

    @D10.7 @cli
    Scenario: A wait on a run its budget stops returns it terminal, failed, budget_exceeded
      Given an agent CLI "claude" that replays its recorded "tool" stream slowly
      When a caller waits on the run li submits on it with "--max-tokens 20"
      Then the wait entry says terminal true, outcome "failed" and reason "budget_exceeded"

    @D10.7
    Scenario: Terminal and outcome answer different questions on every entry
      Given a wait batch on this host:
        | name    | state           |
        | fine    | completed       |
        | empty   | completed_empty |
        | late    | timed_out       |
        | stopped | cancelled       |
        | odd     | vanished        |
        | nospawn | spawn failed    |
        | busy    | running         |
      When the caller waits on "fine, empty, late, stopped, odd, nospawn, busy" with max wait 0 and poll interval none
      Then the wait entries in order are:
        | name    | status          | terminal | outcome       | error |
        | fine    | completed       | true     | succeeded     | -     |
        | empty   | completed_empty | true     | failed        | -     |
        | late    | timed_out       | true     | failed        | -     |
        | stopped | cancelled       | true     | cancelled     | -     |
        | odd     | vanished        | true     | indeterminate | -     |
        | nospawn | failed          | true     | failed        | -     |
        | busy    | running         | false    | -             | -     |

  Rule: D10.8a — An id that waiting cannot resolve does not hold the window open

    @D10.8a
    Scenario: A stopped run and an aged preparing record come back at once, each in its own list, never pending
      Given a wait batch on this host:
        | name  | state                     |
        | lost  | gone, identity unrecorded |
        | stale | aged preparing            |
      When the caller waits on "lost, stale" with max wait 60 and poll interval 1
      Then the wait entries in order are:
        | name  | status  | terminal | outcome | error |
        | lost  | exited  | false    | -       | -     |
        | stale | running | false    | -       | -     |
      And the wait partition is:
        | bucket              | names |
        | pending             |       |
        | stopped_without_end | lost  |
        | unresolved_spawn    | stale |
      And all_terminal is false and timed_out is false
      And the wait slept for 1 and observed 2 times

    @D10.8a
    Scenario: Phase absence is not stopped evidence: a live pre-field record and a fresh preparing record stay pending
      Given a wait batch on this host:
        | name   | state                      |
        | oldrun | alive, identity unrecorded |
        | young  | preparing                  |
        | abroad | started on another host    |
      When the caller waits on "oldrun, young, abroad" with max wait 2 and poll interval 1
      Then the wait partition is:
        | bucket              | names                 |
        | pending             | oldrun, young, abroad |
        | stopped_without_end |                       |
        | unresolved_spawn    |                       |
      And all_terminal is false and timed_out is true

    @D10.8a
    Scenario: A run waiting for a person's approval stays pending, never ended and never stopped
      Given a wait batch on this host:
        | name   | state                           |
        | asking | waiting for a person's approval |
        | done   | completed                       |
      When the caller waits on "asking, done" with max wait 1 and poll interval 1
      Then the wait entries in order are:
        | name   | status           | terminal | spawn_state |
        | asking | waiting_approval | false    | started     |
        | done   | completed        | true     | started     |
      And the wait partition is:
        | bucket              | names  |
        | pending             | asking |
        | stopped_without_end |        |
        | unresolved_spawn    |        |
      And all_terminal is false and timed_out is true

    @D10.8a
    Scenario: A run waiting for its queue's slot stays pending, never ended and never stopped
      Given a wait batch on this host:
        | name   | state                      |
        | waiter | queued, waiting for a slot |
        | done   | completed                  |
      When the caller waits on "waiter, done" with max wait 1 and poll interval 1
      Then the wait entries in order are:
        | name   | status    | terminal | spawn_state |
        | waiter | queued    | false    | started     |
        | done   | completed | true     | started     |
      And the wait partition is:
        | bucket              | names  |
        | pending             | waiter |
        | stopped_without_end |        |
        | unresolved_spawn    |        |
      And all_terminal is false and timed_out is true

    @D10.8a
    Scenario: A run waiting for other runs stays pending, and one ended dependency_failed is terminal
      Given a wait batch on this host:
        | name    | state                                  |
        | waiter  | waiting for another run                |
        | stopped | ended unstarted, its dependency failed |
      When the caller waits on "waiter, stopped" with max wait 1 and poll interval 1
      Then the wait entries in order are:
        | name    | status    | terminal | spawn_state |
        | waiter  | waiting   | false    | started     |
        | stopped | cancelled | true     | started     |
      And the wait partition is:
        | bucket              | names   |
        | pending             | waiter  |
        | stopped_without_end |         |
        | unresolved_spawn    |         |
      And all_terminal is false and timed_out is true

    @D10.8a @D5.6
    Scenario: A record written before the spawn phase existed is judged by its process, never read as preparing
      Given a wait batch on this host:
        | name  | state                                         |
        | alive | written before the spawn phase existed, alive |
        | gone  | written before the spawn phase existed, gone  |
      When the caller waits on "alive, gone" with max wait 0 and poll interval 1
      Then the wait entries in order are:
        | name  | status  | terminal | spawn_state |
        | alive | running | false    | -           |
        | gone  | exited  | false    | -           |
      And the wait partition is:
        | bucket              | names |
        | pending             | alive |
        | stopped_without_end | gone  |
        | unresolved_spawn    |       |

  Rule: D10.8b — The partition: terminal, pending, stopped_without_end and unresolved_spawn are disjoint and exhaustive

    @D10.8b
    Scenario: The acceptance batch is partitioned exactly, with its per-id errors in input order
      Given a wait batch on this host:
        | name  | state                     |
        | done  | completed                 |
        | broke | failed                    |
        | busy  | running                   |
        | lost  | gone, identity unrecorded |
        | stale | aged preparing            |
        | ghost | unknown                   |
        | typo  | malformed                 |
      And "busy" records its end 2 seconds into the wait
      When the caller waits on "done, broke, busy, lost, stale, ghost, typo" with max wait 60 and poll interval 1
      Then the wait entries in order are:
        | name  | status    | terminal | outcome   | error         |
        | done  | completed | true     | succeeded | -             |
        | broke | failed    | true     | failed    | -             |
        | busy  | completed | true     | succeeded | -             |
        | lost  | exited    | false    | -         | -             |
        | stale | running   | false    | -         | -             |
        | ghost | -         | -        | -         | not_found     |
        | typo  | -         | -        | -         | invalid_input |
      And the wait partition is:
        | bucket              | names |
        | pending             |       |
        | stopped_without_end | lost  |
        | unresolved_spawn    | stale |
      And the four buckets are disjoint and cover every id that was observed
      And all_terminal is false and timed_out is false
      And the wait slept for 1 then 1 and observed 3 times

  Rule: D10.8c — The floor: a call about to answer without having waited, beside a stopped or unresolved id, sleeps one interval and looks once more

    @D10.8c
    Scenario Outline: An already-finished batch beside one unresolvable id pays one poll interval, once
      Given a wait batch on this host:
        | name    | state     |
        | done    | completed |
        | special | <state>   |
      When the caller waits on "done, special" with max wait 60 and poll interval 2
      Then the wait slept for 2 and observed 2 times

      Examples:
        | state                     |
        | gone, identity unrecorded |
        | aged preparing            |

    @D10.8c
    Scenario: The extra observation is the interval in which a slow end-writer finishes
      Given a wait batch on this host:
        | name | state                     |
        | done | completed                 |
        | slow | gone, identity unrecorded |
      And "slow" records its end 0.5 seconds into the wait
      When the caller waits on "done, slow" with max wait 60 and poll interval 1
      Then all_terminal is true and timed_out is false
      And the wait slept for 1 and observed 2 times

  Rule: D10.8d — The floor's exemptions: max_wait 0 is untaxed, a call that waited pays nothing extra, the window caps it

    @D10.8d
    Scenario: max_wait 0 stays a snapshot even beside a stopped run
      Given a wait batch on this host:
        | name  | state                     |
        | done  | completed                 |
        | lost  | gone, identity unrecorded |
        | stale | aged preparing            |
      When the caller waits on "done, lost, stale" with max wait 0 and poll interval 5
      Then the wait slept not at all and observed 1 times

    @D10.8d
    Scenario: A call that already waited on a running id pays nothing extra
      Given a wait batch on this host:
        | name | state                     |
        | busy | running                   |
        | lost | gone, identity unrecorded |
      And "busy" records its end 1 seconds into the wait
      When the caller waits on "busy, lost" with max wait 60 and poll interval 1
      Then the wait slept for 1 and observed 2 times

    @D10.8d
    Scenario: The floor is bounded by what is left of the window
      Given a wait batch on this host:
        | name | state                     |
        | done | completed                 |
        | lost | gone, identity unrecorded |
      When the caller waits on "done, lost" with max wait 0.3 and poll interval 1
      Then the wait slept for 0.3 and observed 2 times

    @D10.8d
    Scenario: Nothing special, nothing paid: ended runs and per-id errors answer at once
      Given a wait batch on this host:
        | name  | state     |
        | done  | completed |
        | broke | failed    |
        | ghost | unknown   |
      When the caller waits on "done, broke, ghost" with max wait 60 and poll interval 1
      Then the wait slept not at all and observed 1 times
