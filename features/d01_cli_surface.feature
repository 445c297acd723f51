@D1 @cli
Feature: D1 — lionagi owns the contract, and it is a CLI-level surface
  The contract is a property of the `li` executable. Machine mode is explicit, never
  inferred: under --machine a command writes exactly one JSON object to stdout and nothing
  else, sends all human-facing output to stderr, and does not colour, paginate or prompt.

  Background:
    Given a fresh li home

  Rule: D1.1 — The contract is a property of the li executable, reached by running a command

    @D1.1
    Scenario: A program learns the contract by running li, with no import of our code
      When a program runs li with "handshake --machine"
      Then stdout holds exactly one JSON object and nothing else
      And the envelope says ok is true
      And the handshake data names contract_version 1

  Rule: D1.2 — Machine mode is explicit, never inferred

    @D1.2
    Scenario: A piped li without --machine still speaks to a person
      When a program runs li with "handshake"
      Then stdout is readable text, not a JSON object
      And the exit status is 0

    @D1.2
    Scenario Outline: --machine is honoured anywhere before a "--"
      When a program runs li with "<arguments>"
      Then stdout holds exactly one JSON object and nothing else
      And the exit status is 0

      Examples:
        | arguments                                             |
        | --machine handshake                                   |
        | handshake --machine                                   |
        | job --machine status 20990101T000000-abcdef           |
        | --machine job status --machine 20990101T000000-abcdef |

    @D1.2
    Scenario: A --machine after "--" is an argument, not a request for machine mode
      When a program runs li with "handshake -- --machine"
      Then stdout is empty
      And stderr is exactly one line
      And the exit status is 2

  Rule: D1.3 — Under --machine, exactly one JSON object reaches stdout

    @D1.3
    Scenario Outline: Every kind of answer is one JSON object and nothing else
      When a program runs li with "<arguments>"
      Then stdout holds exactly one JSON object and nothing else
      And the exit status is 0

      Examples:
        | arguments                             |
        | handshake --machine                   |
        | --help --machine                      |
        | job --help --machine                  |
        | --version --machine                   |
        | no-such-command --machine             |
        | handshake --no-such-flag --machine    |
        | job status --machine                  |
        | job status ../../etc/passwd --machine |
        | --machine                             |

  Rule: D1.4 — Under --machine, all human-facing output goes to stderr

    @D1.4
    Scenario: Text written outside the envelope by li's own process lands on stderr
      Given li's own process writes "stray words" to its stdout, by both routes, as it exits
      When a program runs li with "handshake --machine"
      Then stdout holds exactly one JSON object and nothing else
      And stderr mentions "stray words"

    @D1.4
    Scenario: The help a person would read is carried inside the envelope
      When a program runs li with "--help --machine"
      Then stdout holds exactly one JSON object and nothing else
      And the envelope's data carries the help text

  Rule: D1.5 — Under --machine, nothing is coloured, paginated or prompted for

    @D1.5
    Scenario Outline: A terminal-loving environment gets no colour, no pager and no prompt
      Given an environment that asks for colour and names a pager
      When a program runs li with "<arguments>" while stdin stays open
      Then li finished without reading stdin
      And neither stream holds an escape sequence or the pager's words

      Examples:
        | arguments                 |
        | --help --machine          |
        | handshake --machine       |
        | no-such-command --machine |

  Rule: D1.6 — A consumer invokes li by absolute path, never through PATH

    @D1.6
    Scenario: li answers when run by absolute path with an empty PATH
      When a program runs li by absolute path with an empty PATH and "handshake --machine"
      Then stdout holds exactly one JSON object and nothing else
      And the handshake's module is an absolute path that exists
