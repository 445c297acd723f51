@D2 @cli
Feature: D2 — Version is an integer, and it is checked on every envelope
  `li handshake --machine` says which contract this build speaks; every envelope repeats
  contract_version so a consumer can validate it before decoding data.

  Background:
    Given a fresh li home

  Rule: D2.1 — contract_version is a single integer

    @D2.1
    Scenario: The handshake's contract_version is the integer 1, in the data and on the envelope
      When a program runs li with "handshake --machine"
      Then the handshake data names contract_version 1
      And the envelope's contract_version is the integer 1

  Rule: D2.2 — The handshake governs registration

    @D2.2
    Scenario: The handshake gives a consumer everything registration needs, and changes nothing
      When a program runs li with "handshake --machine" twice
      Then both handshakes are identical
      And the handshake data has the fields contract_version, min_supported_version, implementation, implementation_version, module
      And the li home was not touched

    @D2.2
    Scenario: An installation missing a required module fails the handshake instead of registering
      Given a required dependency "psutil" that is not installed
      When a program runs li with "handshake --machine"
      Then the exit status is 78
      And stdout is empty

  Rule: D2.3 — Every envelope repeats contract_version

    @D2.3
    Scenario: Successes, refusals, help and usage errors all carry the handshake's contract_version
      When a program runs each of these li calls:
        | arguments                                   |
        | handshake --machine                         |
        | --version --machine                         |
        | --help --machine                            |
        | no-such-command --machine                   |
        | job status 20990101T000000-abcdef --machine |
        | job status not-a-run-id --machine           |
      Then every answer is an envelope carrying the handshake's contract_version

  Rule: D2.4 — min_supported_version is the oldest contract still honoured

    @D2.4
    Scenario: min_supported_version is an integer no newer than contract_version
      When a program runs li with "handshake --machine"
      Then min_supported_version is the integer 1, not above contract_version

  Rule: D2.5 — implementation_version and module are diagnostic

    @D2.5
    Scenario: The handshake says which build is talking, for a person reading a report
      When a program runs li with "handshake --machine"
      Then the implementation is "lionrun" at the version li --version prints
      And the handshake's module is an absolute path that exists
