@D7
Feature: D7 — Nothing read from disk is reported as a bare null or empty list
  Every read-derived field says whether its value could be established: `available: true` with an
  empty value is a fact, `available: false` is a failure to establish one, with a reason.

  Rule: D7.1 — available true with an empty value means, definitively, there is none

    @D7.1
    Scenario: An empty console, an empty artifacts folder and no notice configured are facts
      Given a run "r" that is running
      And the run "r" has an empty console log and an empty artifacts folder
      When the output answer for "r" is read
      And the status answer for "r" is read
      Then the output answer's console is available with value ""
      And the output answer's artifacts are available with value []
      And the status answer's delivery is available with value {"attempted": false, "ok": null, "exit_code": null, "error": null, "failure_class": null}

  Rule: D7.2 — available false means the value could not be established, with a reason and detail

    @D7.2
    Scenario Outline: A manifest that cannot be read says why
      Given a run "r" that is running
      And the run "r" has a manifest that is <state>
      When the output answer for "r" is read
      Then the output answer's manifest is unavailable with reason "<reason>" and a detail

      Examples:
        | state      | reason     |
        | missing    | missing    |
        | malformed  | malformed  |
        | unreadable | unreadable |

    @D7.2 @cli
    Scenario Outline: What a run's work put where a file of the run belongs is unavailable, never followed
      Given a finished real run whose <name> is now <thing>
      When a program reads its output and its status
      Then the output's <part> is unavailable with reason "<reason>"
      And nothing of what lies outside the store was served

      Examples:
        | name          | thing                                | part      | reason           |
        | console.log   | a link to a file outside the store   | console   | not_regular_file |
        | console.log   | a FIFO                               | console   | not_regular_file |
        | manifest.json | a link to a file outside the store   | manifest  | not_regular_file |
        | manifest.json | a FIFO                               | manifest  | not_regular_file |
        | artifacts     | a link to a folder outside the store | artifacts | not_a_directory  |

  Rule: D7.3 — the two are never collapsed; available false is never rendered as none

    @D7.3
    Scenario: A missing console and an empty console are different answers
      Given a run "a" that is running
      And a run "b" that is running
      And the run "b" has an empty console log and an empty artifacts folder
      When the output answers for "a" and "b" are read
      Then the console of "a" is unavailable and the console of "b" is available and empty

    @D7.3
    Scenario: A configured notice with no recorded attempt is never "attempted: false"
      Given a run "r" that is running, with a notice configured
      When the status answer for "r" is read
      Then the status answer's delivery is unavailable with reason "not_yet_written" and a detail

    @D7.3 @cli
    Scenario: A person reading status is told the meter is unavailable, not that usage is none
      Given a real stored run with no manifest
      When a person reads its status
      Then the summary says the usage is unavailable

  Rule: D7.4 — the wrapper covers every read-derived field

    @D7.4
    Scenario: Console, artifacts, manifest, delivery and usage all carry the wrapper
      Given a run "r" that is running
      When the output answer for "r" is read
      And the status answer for "r" is read
      Then every read-derived field of both answers carries available, value, reason_code and detail

    @D7.4
    Scenario: An absent meter is unavailable, never zero
      Given a run "r" that is running
      And the run "r" has a manifest without usage
      When the status answer for "r" is read
      Then the status answer's usage is unavailable with reason "not_recorded" and a detail

  Rule: D7.5 — the wrapper does not apply to intrinsically optional fields such as label

    @D7.5
    Scenario: A run without a label says null, unwrapped
      Given a run "r" that is running
      When the status answer for "r" is read
      Then the status answer's label is a bare null

  Rule: D7.6 — console also carries truncated

    @D7.6
    Scenario Outline: truncated says whether the tail is the whole log
      Given a run "r" that is running
      And the run "r" has a console log of "line one\nline two\n"
      When the output answer for "r" is read with tail <tail>
      Then the output answer's console is truncated <truncated>

      Examples:
        | tail  | truncated |
        | 5     | true      |
        | 20000 | false     |

  Rule: D7 over a run's worktree changes — a diff that could not be read is never an empty patch

    @D7.2 @D7.3
    Scenario: A patch that cannot be read is unavailable with its reason, and so are its files
      Given a run "r" that ended with a worktree whose work left a patch that is missing
      When the diff answer for "r" is read
      Then the diff answer's patch and files are unavailable with reason "patch_unreadable" and a detail

    @D7.1
    Scenario: Work that left nothing has an empty patch, available
      Given a run "r" that ended with a worktree whose work left nothing
      When the diff answer for "r" is read
      Then the diff answer's patch is available with value "" and its files with value []

    @D7.4
    Scenario: The patch and the files read from it carry the wrapper
      Given a run "r" that ended with a worktree whose work left a patch
      When the diff answer for "r" is read
      Then the diff answer's patch is the patch and its files count its lines

  Rule: D7 over applying a run's changes — a patch that is not what the branch holds is never applied

    @D7.2 @D3.3 @cli
    Scenario: A kept patch that differs from the run's branch is refused unavailable, and nothing is applied
      Given a worktree run that ended, whose kept patch was changed after its end
      When its changes are applied to a clean checkout of the repository
      Then the apply is refused with kind "unavailable" and reason "patch_differs"
      And the clean checkout is unchanged
