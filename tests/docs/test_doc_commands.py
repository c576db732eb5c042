"""Every command the README and the docs show exists with every option it is shown with: a
renamed or removed option fails here, naming the page and line that still shows it."""

from __future__ import annotations

from tests.docs.doc_commands import DocCommand, commands_in, doc_pages, problems


def test_the_docs_show_many_commands() -> None:
    found = [command for page in doc_pages() for command in commands_in(page)]
    assert len(found) > 100  # the reader finds them: an empty harvest would pass anything


def test_every_documented_command_and_option_exists() -> None:
    wrong = [
        f"{command.where()}: {problem} (in `{command.text}`)"
        for page in doc_pages()
        for command in commands_in(page)
        for problem in problems(command)
    ]
    assert not wrong, "\n".join(wrong)


def test_a_renamed_option_is_caught(tmp_path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run `sparkrig bench URL --no-such-option 3` and\n\n```bash\nsparkrig chek URL\n```\n"
    )
    found = commands_in(page)
    assert [command.text for command in found] == [
        "sparkrig bench URL --no-such-option 3",
        "sparkrig chek URL",
    ]
    assert problems(DocCommand(page, 1, found[0].text)) == [
        "`sparkrig bench` has no option `--no-such-option`"
    ]
    assert problems(DocCommand(page, 4, found[1].text)) == ["`sparkrig` has no command `chek`"]
