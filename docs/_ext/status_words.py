"""The table of status words as reStructuredText (no Sphinx needed: the test line checks it)."""


def status_table():
    """The reStructuredText list-table of ``convexmetric.result.STATUS_MESSAGES``."""
    from convexmetric.result import STATUS_MESSAGES

    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 22 78", ""]
    lines += ["   * - status", "     - meaning"]
    for word, meaning in STATUS_MESSAGES.items():
        lines += [f'   * - ``"{word}"``', f"     - {meaning}"]
    return lines
