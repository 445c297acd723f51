@D3 @cli
Feature: D3 — One envelope, for every machine call that reaches the dispatcher
  `{ok, contract_version, data, error}`: exactly one of data and error is set, error.kind is
  drawn from a closed set, and the envelope is emitted even when the command fails.

  Background:
    Given a fresh li home

  Rule: D3.1 — ok alone decides request success

    @D3.1
    Scenario Outline: ok says whether the request succeeded, and the exit status does not
      When a program runs li with "<arguments>"
      Then the envelope says ok is <ok>
      And the exit status is 0

      Examples:
        | arguments                                   | ok    |
        | handshake --machine                         | true  |
        | --help --machine                            | true  |
        | job status 20990101T000000-abcdef --machine | false |
        | no-such-command --machine                   | false |

  Rule: D3.2 — Exactly one of data and error is non-null

    @D3.2
    Scenario: Successes carry data and no error; refusals carry an error and no data
      When a program runs each of these li calls:
        | arguments                                   |
        | handshake --machine                         |
        | --version --machine                         |
        | job --help --machine                        |
        | job status 20990101T000000-abcdef --machine |
        | job status --machine                        |
        | handshake extra-argument --machine          |
      Then every answer sets exactly one of data and error, as ok says

  Rule: D3.3 — error.kind is drawn from a closed set

    @D3.3
    Scenario Outline: Each refusal names its kind from the closed set
      When a program runs li with "<arguments>"
      Then the error kind is "<kind>"

      Examples:
        | arguments                                   | kind          |
        | no-such-command --machine                   | invalid_input |
        | handshake --no-such-flag --machine          | invalid_input |
        | job status --machine                        | invalid_input |
        | job status ../../etc/passwd --machine       | invalid_input |
        | job status 20990101T000000-abcdef --machine | not_found     |

    @D3.3
    Scenario: An unexpected failure inside a command is refused as internal
      Given the handshake command fails with an unexpected exception
      When a program runs li with "handshake --machine"
      Then the error kind is "internal"

  Rule: D3.4 — error.message is for a person; error.detail is an optional object

    @D3.4
    Scenario: Refusals explain themselves in words, with detail an object or null
      When a program runs each of these li calls:
        | arguments                                   |
        | no-such-command --machine                   |
        | job status not-a-run-id --machine           |
        | job status 20990101T000000-abcdef --machine |
        | --machine                                   |
      Then every refusal has a non-empty message and a detail that is an object or null

  Rule: D3.5 — The envelope is emitted even when the command fails

    @D3.5
    Scenario: A command that crashes still answers with an envelope and exit 0
      Given the handshake command fails with an unexpected exception
      When a program runs li with "handshake --machine"
      Then stdout holds exactly one JSON object and nothing else
      And the envelope says ok is false
      And the exit status is 0
      And no traceback reached either stream

    @D3.5
    Scenario: A command that exits abruptly still answers with an envelope
      Given the handshake command exits abruptly with status 3 midway
      When a program runs li with "handshake --machine"
      Then the error kind is "internal"
      And the exit status is 0

  Rule: D3.6 — Failures before the dispatcher are diagnosed by exit status, not by malformed output

    @D3.6
    Scenario Outline: A required module that cannot be loaded leaves stdout empty and exits 78
      Given a required dependency "<module>" that <fault>
      When a program runs li with "<arguments>"
      Then the exit status is 78
      And stdout is empty
      And stderr is exactly one line

      Examples:
        | module              | fault               | arguments                        |
        | psutil              | fails when imported | agent sh true --detach --machine |
        | dependency_injector | fails when imported | job list --machine               |
        | dependency_injector | is not installed    | handshake --machine              |
