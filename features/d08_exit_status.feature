@D8 @cli
Feature: D8 — A valid envelope is authoritative; the exit status answers at the transport level
  Exit 0 whenever an envelope is emitted, ok: false included; 78 only when a required module
  cannot be imported and nothing was executed; anything else without an envelope is a
  transport fault.

  Background:
    Given a fresh li home

  Rule: D8.1 — The command exits 0 whenever an envelope is emitted, ok: false included

    @D8.1
    Scenario Outline: Refusals are successfully handled requests
      When a program runs li with "<arguments>"
      Then the envelope says ok is false
      And the exit status is 0

      Examples:
        | arguments                                   |
        | no-such-command --machine                   |
        | job status --machine                        |
        | job status 20990101T000000-abcdef --machine |
        | job status ../../etc/passwd --machine       |

    @D8.1
    Scenario: Without --machine the same refusal is a non-zero exit and one line for a person
      When a program runs li with "job status not-a-run-id"
      Then stdout is empty
      And stderr is exactly one line
      And the exit status is not 0

  Rule: D8.2 — 78 when a required module cannot be imported and no run was allocated

    @D8.2
    Scenario Outline: A submit over a broken installation exits 78 before anything exists
      Given a required dependency "psutil" that <fault>
      When a program runs li with "agent sh true --detach --machine"
      Then the exit status is 78
      And stdout is empty
      And stderr is exactly one line
      And no run was allocated

      Examples:
        | fault               |
        | fails when imported |
        | is not installed    |

    @D8.2
    Scenario: A submit that fails to import after allocating a run is never answered with 78
      Given the agent command allocates a run and then fails to import a module
      When a program runs li with "agent sh true --detach --machine"
      Then the exit status is 0
      And the error kind is "internal"
      And a run was allocated

  Rule: D8.3 — Any other exit without an envelope is a transport fault

    @D8.3
    Scenario: li killed by a signal ends without an envelope and without 78
      Given li stalls before it can answer
      When a program starts li with "handshake --machine" and kills it
      Then stdout is empty
      And the exit status is neither 0 nor 78

    @D8.3
    Scenario Outline: An envelope stdout cannot take leaves an exit without a parseable envelope, never 0
      When a program runs li with "handshake --machine" and its stdout <fault>
      Then the exit status is 74
      And stderr is exactly one line
      And stderr mentions "transport fault"
      And no traceback reached either stream

      Examples:
        | fault                  |
        | is a full device       |
        | is a pipe nobody reads |
        | is closed              |

    @D8.3
    Scenario: A launch failure has no exit status at all, so it cannot be 78
      When a program launches li from a path that does not exist
      Then the launch itself failed

  Rule: D8.4 — A valid envelope makes the exit status irrelevant; without one only the exit status speaks

    @D8.4
    Scenario: An envelope appears exactly when the exit status is 0
      When a program runs each of these li calls:
        | arguments                                   |
        | handshake --machine                         |
        | no-such-command --machine                   |
        | job status 20990101T000000-abcdef --machine |
        | --help --machine                            |
      And a program runs li with "agent sh true --detach --machine" over a broken installation
      Then an answer holds a valid envelope exactly when its exit status is 0
