"""The model-free checks of a ``done`` claim, on pages given as outlines (no browser): where each
value was read, numbers however written, counts, addresses, free text, and the page a claim names."""

from __future__ import annotations

from stagehand_py.agent._verify import PagesSeen, _agreement, _final_state, _values

LIST = """[0-1] heading: Orders
[0-2] StaticText: Total due: $1,234.50 for 3 orders
[0-3] table
  [0-4] row
    [0-5] columnheader: Order
  [0-6] row
    [0-7] cell: Anchor
  [0-8] row
    [0-9] cell: Bolt
  [0-10] row
    [0-11] cell: Cable
[0-12] link: Details"""
DETAIL = """[0-1] heading: Order Anchor
[0-2] StaticText: Shipped on 2024-03-16"""


def _pages() -> PagesSeen:
    pages = PagesSeen()
    pages.record(1, signature="list", url="http://shop.test/orders", title="Orders - Shop", text=LIST,
                 links=["http://shop.test/orders/anchor"])
    pages.record(2, signature="detail", url="http://shop.test/orders/anchor", title="Anchor - Shop", text=DETAIL)
    return pages


def test_each_value_is_found_where_the_run_read_it_numbers_however_written() -> None:
    reads, unchecked = _values(_pages(), {"total": 1234.5, "due": "$1,234.50", "name": "anchor", "shipped": "2024-03-16",
                                          "rows": 3, "link": "http://shop.test/orders/anchor/", "paid": True}, "")
    found = {r.field: (r.how, r.step) for r in reads}
    assert found == {
        "$.total": ("number", 1),        # 1234.5 is the page's "1,234.50"
        "$.due": ("text", 1),
        "$.name": ("text", 2),           # the latest page that shows it
        "$.shipped": ("text", 2),
        "$.rows": ("text", 1),           # "3 orders" on the page
        "$.link": ("address", 2),        # the address the run was on (trailing slash aside)
    }
    assert unchecked == 1  # a yes/no answer is no page text


def test_a_count_is_a_table_s_rows_and_a_missing_value_says_so() -> None:
    reads, _ = _values(_pages(), {"count": 3, "orders": ["Anchor", "Drill"]}, "")
    by_field = {r.field: r for r in reads}
    assert by_field["$.orders[0]"].how == "text"
    assert by_field["$.orders[1]"].how == "missing" and by_field["$.orders[1]"].step is None
    # 3 is both written ("3 orders") and the table's data rows (the header row is no data row).
    pages = PagesSeen()
    pages.record(1, signature="t", url="http://shop.test/t", title="T", text=LIST.replace(" for 3 orders", ""))
    (count,) = _values(pages, {"count": 3}, "")[0]
    assert count.how == "row count"
    (ids,) = _values(pages, {"count": 12}, "")[0]  # the outline's ids ([0-12]) are no page text
    assert ids.how == "missing"


def test_free_text_is_checked_by_its_numbers_and_quoted_names_in_the_message_are_values() -> None:
    summary = "The customer has several orders and the total amount they still owe is 1234.50 dollars in all"
    reads, unchecked = _values(_pages(), {"summary": summary}, 'I opened "Order Anchor" and the "Invoices" tab')
    assert [(r.field, r.value, r.how) for r in reads] == [
        ("$.summary", "1234.50", "number"), ("message", "Order Anchor", "text"), ("message", "Invoices", "missing")]
    assert unchecked == 0
    _, unchecked = _values(_pages(), {"summary": "a long sentence without any number in it that goes on and on"}, "")
    assert unchecked == 1


def test_a_page_the_claim_names_must_be_the_page_the_run_ended_on() -> None:
    pages = _pages()  # ended on the detail page
    assert _final_state(pages, {"title": "Order Anchor"}, "", 3).passed is True
    wrong = _final_state(pages, {"title": "Orders"}, "", 3)
    assert wrong.passed is False and "seen at step 1" in wrong.detail and "ended on 'Anchor - Shop'" in wrong.detail
    assert _final_state(pages, None, "The page title is 'Orders - Shop'.", 3).passed is False
    assert _final_state(pages, {"url": "http://shop.test/orders"}, "", 3).passed is False
    # A title no page the run reached has (a value from a table, say) is no claim about the final page.
    assert _final_state(pages, {"title": "Bolt"}, "", 3).passed is None
    assert _final_state(pages, {"name": "Orders"}, "", 3).passed is None


def test_the_output_s_numbers_must_be_ones_the_message_states() -> None:
    assert _agreement({"count": 3}, "There are 3 books by her.", 4).passed is True
    assert _agreement({"total": "1,234.50", "rows": 3}, "3 orders, $1234.5 due", 4).passed is True
    differs = _agreement({"count": 1}, "There are 3 books linked to Chinua Achebe.", 4)
    assert differs.passed is False and differs.detail == "the output says $.count = 1, but the run's messages state 3"
    assert _agreement({"count": 4}, "The word 'harbor' was found in 48 books.", 4).passed is False  # not a part of 48
    # Nothing to compare: no number in the message, or none in the output (a yes/no is not a number).
    assert _agreement({"count": 1}, "filter the books table to the Poetry genre", 4).passed is None
    assert _agreement({"found": True, "name": "Anchor"}, "Found 1 order", 4).passed is None
    assert _agreement(None, "3 orders", 4).passed is None
    # The values inside a list of records are not the claim's count: "4 products" beside four prices.
    products = {"products": [{"name": "Anchor", "price": "$89.00"}, {"name": "Bolt", "price": "$54.50"}]}
    assert _agreement(products, "4 products", 4).passed is None
    assert _agreement({**products, "count": 2}, "4 products", 4).passed is False
    assert _agreement(7, "There are 7.", 4).passed is True


def test_no_run_is_done_on_the_browser_s_error_page() -> None:
    pages = _pages()
    pages.record(3, signature="error", url="chrome-error://chromewebdata/", title="shop.test", text="")
    ended = _final_state(pages, {"version": "3.6"}, "found it", 4)
    assert ended.passed is False and "ended on a page that did not load (chrome-error://chromewebdata/)" in ended.detail
    pages.record(4, signature="detail", url="http://shop.test/orders/anchor", title="Anchor - Shop", text=DETAIL)
    assert _final_state(pages, {"version": "3.6"}, "found it", 5).passed is None  # back on a page: nothing named


def test_a_claim_that_is_a_message_alone_must_name_something_the_final_page_shows() -> None:
    pages = _pages()  # ended on the detail page: "Order Anchor", shipped on 2024-03-16
    assert _final_state(pages, None, "Shipped the order Anchor on 2024-03-16", 3).passed is True
    unsaved = _final_state(pages, None, "Added the order Harbor Lights for Mary Shelley, price 12.50", 3)
    assert unsaved.passed is False and "does not show 'Harbor Lights', 'Mary Shelley'" in unsaved.detail
    # Every name it gives: the order Anchor is shown, the Bolt it says it shipped with is not.
    assert _final_state(pages, None, "Shipped the order Anchor with Bolt", 3).passed is False
    # Nothing named (the first word of a sentence is no name): nothing to look for.
    assert _final_state(pages, None, "Created it. Saved.", 3).passed is None
    assert _final_state(pages, None, "on 0-12, 2 of 3 done", 3).passed is None  # numbers are no names
    # With an output, the values check reads the claim, not this one.
    assert _final_state(pages, {"count": 3}, "Added the order Harbor Lights", 3).passed is None


def test_a_count_is_a_count_the_final_page_states_not_any_number_it_shows() -> None:
    pages = _pages()  # the list states "3 orders", its table has 3 rows; the run ended on the detail page
    assert [r.how for r in _values(pages, {"count": 3}, "")[0]] == ["missing"]  # another page's count
    pages.record(3, signature="list", url="http://shop.test/orders", title="Orders - Shop", text=LIST)
    (stated,) = _values(pages, {"count": 3}, "")[0]
    assert (stated.how, stated.step) == ("text", 3)
    pages.record(4, signature="detail", url="http://shop.test/orders/anchor", title="Anchor - Shop", text=DETAIL)
    # 16 is on a page (the date), 12 is the page's own outline id: neither is a count it states.
    assert [r.how for r in _values(pages, {"count": 16, "book_count": 12}, "")[0]] == ["missing", "missing"]
    assert _values(pages, {"shipped_day": 16}, "")[0][0].how == "text"  # not a count field: any number shown
    # A page that states its total ("200 books") and shows some of them: its rows are no count.
    paged = PagesSeen()
    rows = "\n".join(f"  [0-{2 * i + 10}] row\n    [0-{2 * i + 11}] cell: Book {i}" for i in range(4))
    paged.record(1, signature="p", url="http://shop.test/books", title="Books", text=f"[0-1] StaticText: 200 books\n[0-2] table\n{rows}")
    assert [r.how for r in _values(paged, {"count": 4}, "")[0]] == ["missing"]
    assert [r.how for r in _values(paged, {"number_of_books": "200"}, "")[0]] == ["text"]
    # A count stated on one line only: a cell "3" above the next row is not "3 row".
    cells = PagesSeen()
    cells.record(1, signature="c", url="http://shop.test/c", title="C", text="[0-1] StaticText: Showing 8 issues\n"
                 "[0-2] table\n  [0-3] row\n    [0-4] cell: 3\n  [0-5] row\n    [0-6] cell: 5")
    assert [r.how for r in _values(cells, {"count": 3, "how_many": 8}, "")[0]] == ["missing", "text"]


def test_a_message_claim_is_not_shown_by_what_the_run_typed_or_could_pick() -> None:
    # The embedded model's shape (Django's create task): "Harbor Lights" claimed on the unsaved add
    # form, where it is only the title field's value, and "Mary Shelley" one of the select's options.
    form = """[0-1] heading: Add book
[0-2] form
  [0-3] textbox: Title value="Harbor Lights"
  [0-4] combobox: Author value="Mary Shelley"
    [0-5] option: Ann Lee
    [0-6] option: Mary Shelley [selected]
  [0-7] button: Save"""
    pages = PagesSeen()
    pages.record(1, signature="form", url="http://shop.test/books/add", title="Add book", text=form)
    unsaved = _final_state(pages, None, "Added the book Harbor Lights by Mary Shelley", 2)
    assert unsaved.passed is False and "does not show 'Harbor Lights', 'Mary Shelley'" in unsaved.detail
    # The control: the page after saving says so in its text.
    pages.record(2, signature="saved", url="http://shop.test/books", title="Books",
                 text='[0-1] StaticText: The book "Harbor Lights" was added successfully.\n[0-2] table\n'
                      '  [0-3] row\n    [0-4] cell: Harbor Lights\n    [0-5] cell: Mary Shelley')
    assert _final_state(pages, None, "Added the book Harbor Lights by Mary Shelley", 3).passed is True
