"""One-time codes: boxes that take one digit each (or a field marked autocomplete=one-time-code)
show only that they are filled, never the digits, on both snapshot paths. The control shows an
ordinary field with the same digit does show its value."""

from __future__ import annotations

PAGE = """<!doctype html><form><fieldset><legend>Code</legend>
""" + "".join(f"<input aria-label='Digit {i}' maxlength=1 inputmode=numeric>" for i in range(1, 7)) + """
</fieldset><label>SMS code <input autocomplete="one-time-code"></label>
<label>Floor <input id=floor></label></form>"""


async def test_one_time_code_digits_never_show(sh, page) -> None:
    await page.set_content(PAGE)
    for i, digit in enumerate("482913", start=1):
        await page.fill(f"[aria-label='Digit {i}']", digit)
    await page.get_by_label("SMS code").fill("482913")
    await page.fill("#floor", "4")
    tree = (await sh.snapshot()).tree
    digit_lines = [line for line in tree.split("\n") if "textbox: Digit" in line or "textbox: SMS code" in line]
    assert len(digit_lines) == 7 and all("[filled]" in line and "value=" not in line for line in digit_lines), digit_lines
    assert "482913" not in tree
    assert 'textbox: Floor value="4"' in tree  # control: an ordinary field shows its value
