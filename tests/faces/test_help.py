"""Help texts and hints: every command has help for each option and an example
that parses, summaries are whole sentences, --json where results are printed, and hints that
suggest only what can be done."""

from __future__ import annotations

import importlib
import json
import re
import shlex
from pathlib import Path

import click
import pytest
from support import simdb

from simdb.cli import COMMAND_MODULES, all_commands, main, summaries
from simdb.cli.examples import EXAMPLES
from simdb.plan.planner import designs


def _commands() -> dict[str, click.Command]:
    """Every command by name, and each group's subcommands as "group sub"."""
    found = all_commands()
    for name, command in all_commands().items():
        if isinstance(command, click.Group):
            found.update({f"{name} {sub}": each for sub, each in command.commands.items()})
    return found


# The simdb command in an example line: at its start, after a pipe or inside $( ), after any
# NAME=value settings; up to a pipe, a redirection or the closing parenthesis.
_SIMDB_COMMAND = re.compile(r"(?:^|[|(])\s*(?:[A-Z_]+=\S+\s+)*simdb\s([^|>)]*)")


def test_every_command_has_an_example_that_parses() -> None:
    assert set(EXAMPLES) == set(_commands())
    for name, lines in EXAMPLES.items():
        for line in lines:
            found = _SIMDB_COMMAND.search(line)
            assert found, line
            words = shlex.split(found.group(1))
            assert words[: len(name.split())] == name.split(), line
            command = _commands()[words[0]]
            if isinstance(command, click.Group):
                assert words[1] in command.commands, line
                command, words = command.commands[words[1]], words[1:]
            # under simdb's own context, as a run makes it (click keeps the first --help option
            # a command makes: without simdb's -h it would lose -h for the tests after this one)
            parent = click.Context(main, info_name="simdb", **main.context_settings)
            with command.make_context(words[0], words[1:], parent=parent):  # raises on a bad option or value
                pass


def test_every_option_has_help_and_the_summaries_are_whole_sentences(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, command in _commands().items():
        for parameter in command.params:
            if isinstance(parameter, click.Option) and not parameter.hidden:
                assert parameter.help, f"simdb {name} {parameter.opts[0]} has no help text"
        code, out, _ = simdb(capsys, *name.split(), "--help")
        assert code == 0 and "Examples:\n" in out and f"simdb {name}" in out.split("Examples:")[1], name
    code, out, _ = simdb(capsys, "--help")
    listed = " ".join(out.split("Commands:\n")[1].split())  # as words, however it is wrapped
    assert code == 0 and "..." not in listed
    assert (
        "fingerprint Print the 64-bit fingerprint (one-bit MinHash, spec v3, unless --fingerprint-spec 2 for "
        "SimHash; --bits 128 for 128 bits) of a text, or its MinHash sketch (spec v3: the band keys for "
        "--threshold, then a 64-word check)."
    ) in listed
    assert "bytes:N" in simdb(capsys, "fingerprint", "--help")[1]


def test_plan_lists_each_design_once() -> None:
    assert [(d.plan.blocks, d.tables) for d in designs(10, 0)] == [(1, 1)]
    assert [d.plan.blocks for d in designs(1_000_000, 3)] == [4, 5, 6, 7, 8]


def test_hints_suggest_only_what_can_be_done(
    capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path
) -> None:
    simdb(capsys, "create", "docs")
    simdb(capsys, "create", "near", "--mode", "jaccard", "--threshold", "0.8")
    binary = tmp_path / "lib.so"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    cases = {
        ("query", "docs", "--text", "a b c", "-k", "-1"): "max distance -1 is negative (give a distance "
        "from 0 to 5 (bits))",
        ("query", "near", "--text", "a b c", "--threshold", "1.5"): "min similarity 1.5 is not a Jaccard "
        "similarity (give a value from 0.8 (the index's threshold) to 1)",
        ("drop", "nosuch", "--yes"): "no index named 'nosuch' (check the name and the database: "
        "`simdb list` shows the indexes there)",
        ("query", "docs", "--file", str(binary)): f"{binary} looks binary (it has NUL bytes) (give a text "
        "file; binary files need bytes features: --features bytes:4 on `simdb create` or `simdb fingerprint`)",
    }
    for args, message in cases.items():
        assert simdb(capsys, *args) == (1, "", f"simdb: error: {message}\n"), args
    assert "create one with" not in simdb(capsys, "query", "docs", "--text", "a b c", "-k", "-1")[2]


def test_result_commands_take_json(capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path) -> None:
    text = "the same words stand in every one of these documents " * 3
    records = [json.dumps({"key": f"k{i}", "text": text}) for i in range(3)]
    (tmp_path / "same.jsonl").write_text("\n".join(records))
    assert simdb(capsys, "ingest", "docs", str(tmp_path / "same.jsonl"), "--create")[0] == 0
    pairs = [{"key_a": a, "key_b": b, "distance": 0} for a, b in (("k0", "k1"), ("k0", "k2"), ("k1", "k2"))]
    code, out, _ = simdb(capsys, "pairs", "docs", "--json")
    assert code == 0 and json.loads(out) == pairs
    assert json.loads(simdb(capsys, "pairs", "docs", "--format", "json")[1]) == pairs
    code, out, err = simdb(capsys, "dedup", "docs", "--keep", "first", "--json")
    assert code == 0 and [row["action"] for row in json.loads(out)] == ["keep", "drop", "drop"]
    assert err == "1 clusters: keep 1 keys, drop 2\n"
    code, out, _ = simdb(capsys, "pairs", "docs", "--json", "--size-ratio", "1.5", "-k", "0")
    assert (code, json.loads(out)) == (0, pairs)
    code, out, _ = simdb(capsys, "fingerprint", "--text", "hello world", "--json")
    assert (code, json.loads(out)) == (
        0,
        {"source": "--text", "mode": "simhash", "fingerprint": "6cf5d058dba6b100"},
    )
    code, out, _ = simdb(capsys, "export", "docs", "--json")
    assert code == 0 and [row["key"] for row in json.loads(out)] == ["k0", "k1", "k2"]


def test_pairs_help_says_how_pairs_are_found_now(capsys: pytest.CaptureFixture[str]) -> None:
    """It described layout v1's permuted columns, which layout v2 no longer stores."""
    code, out, _ = simdb(capsys, "pairs", "--help")
    text = " ".join(out.split())
    assert code == 0 and "permuted column" not in text and "band-key column" not in text
    assert "from each permuted table's prefixes sorted in memory and compared run by run" in text
    assert "from each band's keys sorted the same way" in text


def test_each_command_loads_from_the_module_that_defines_it() -> None:
    """COMMAND_MODULES (what loads when a command runs) names every command of every module of
    simdb.cli, and only those."""
    defined = {}
    for module in ("admin", "data", "search", "measure", "serve", "server"):
        for command in importlib.import_module(f"simdb.cli.{module}").COMMANDS:
            defined[command.name] = module
    assert defined == COMMAND_MODULES
    # `simdb --help` lists the summaries read from the modules' source: each is its command's own
    own = {name: command.get_short_help_str(limit=1000) for name, command in all_commands().items()}
    assert own == summaries()
    assert main.get_command(click.Context(main), "nonsense") is None
