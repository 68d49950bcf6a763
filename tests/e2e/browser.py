"""Where the e2e tests find their browser: Debian's Chromium, run headless."""

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

#: The marks of every browser test module: ``pytestmark = BROWSER_MARKS``.
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Chromium is not installed at {CHROMIUM}"),
]


#: Every open dialog's content fits its box: nothing scrolls sideways and no descendant sticks out past an edge.
DIALOGS_OVERFLOWING = """() => Array.from(document.querySelectorAll("dialog[open]")).flatMap((dialog) => {
  const box = dialog.getBoundingClientRect();
  const out = Array.from(dialog.querySelectorAll("*")).filter((el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1);
  }).map((el) => el.tagName + (el.id ? "#" + el.id : ""));
  if (dialog.scrollWidth > dialog.clientWidth + 1) out.push("scrolls sideways");
  return out.length ? [dialog.id + ": " + out.join(", ")] : [];
})"""


def assert_open_dialogs_fit(page) -> None:
    """Fail naming every open dialog whose content is wider than its box (what clipped the group dialog)."""
    overflowing = page.evaluate(DIALOGS_OVERFLOWING)
    assert not overflowing, overflowing
