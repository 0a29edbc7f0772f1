"""The CLI's argument parser: usage errors as one line naming the verb's help, a close option name suggested
for a mistyped one, and a data file given where the model goes said to look swapped.

Abbreviated options are refused in every verb (``--sample`` for ``--samples``): an abbreviation that works
today silently means another option once one with the same start is added, so the suggestion names the
whole option instead.
"""

from __future__ import annotations

import argparse
import sys

#: suffixes of the data files ``--data`` / ``--eval`` read, never a model
DATA_SUFFIXES = (".npz", ".npy")
#: suffixes of what a verb's first positional argument reads
MODEL_SUFFIXES = (".onnx", ".wbproj")


class UsageParser(argparse.ArgumentParser):
    """Usage errors as one line (like every other error) plus the help to read, exit status 2. The verbs'
    parsers are of this class too (argparse makes them with the top-level parser's class)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # noqa: D102 - argparse API
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):  # noqa: D102 - argparse API
        tokens = list(args) if args is not None else sys.argv[1:]
        verbs = self._verbs()
        typed = next((t for t in tokens if not t.startswith("-")), None)  # the top-level options take no value
        dashed = next((t for t in tokens if t.startswith("-") and t.lstrip("-").lower() in verbs), None)
        if verbs and dashed is not None and typed not in verbs:  # --quantize: a command typed as an option
            self.error(f"unrecognized option {dashed}: commands are written without dashes "
                       f"(workbench-cli {dashed.lstrip('-').lower()} ...)")
        if verbs and typed is not None and typed not in verbs:
            self.error(unknown_verb(typed, list(verbs)))
        verb = next((t for t in tokens if t in verbs), None)
        if verb is not None:
            # an unknown option first: argparse would say "required: -o/--output" before it
            unknown = unknown_options(verbs[verb], tokens[tokens.index(verb) + 1:])
            if unknown:
                verbs[verb].error(unrecognized(verbs[verb], unknown))
            swapped = swapped_data(verbs[verb], tokens[tokens.index(verb) + 1:])
            if swapped:
                verbs[verb].error(swapped)
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = verbs.get(getattr(ns, "command", None) or "", self)
            parser.error(unrecognized(parser, extras, getattr(ns, "data", "")))
        return ns

    def _verbs(self) -> dict[str, argparse.ArgumentParser]:
        """Verb name -> its parser ({} for a verb's own parser)."""
        sub = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
        return dict(sub.choices) if sub is not None else {}


def unknown_verb(typed: str, verbs: list[str]) -> str:
    """The one-line message for a command that is not one of ``verbs``: the closest one
    (``quantise``: did you mean 'quantize'?), else the list of them; a model or data file typed first is
    told that the command comes first."""
    import difflib  # only for a usage error: a plain command does not load it

    if typed.lower().endswith(MODEL_SUFFIXES + DATA_SUFFIXES):
        return f"{typed}: the command comes first, e.g. workbench-cli inspect {typed} (the commands: {', '.join(verbs)})"
    close = difflib.get_close_matches(typed.lower(), verbs, n=1, cutoff=0.6)
    if close:
        return f"unknown command '{typed}': did you mean '{close[0]}'?"
    return f"unknown command '{typed}': the commands are {', '.join(verbs)}"


def _positionals(parser: argparse.ArgumentParser, tokens: list[str]) -> list[str]:
    """The tokens of a verb's command line that are not options or option values."""
    found, skip = [], False
    for t in tokens:
        if skip:
            skip = False
        elif t.startswith("-") and t != "-":
            action = parser._option_string_actions.get(t.split("=", 1)[0])
            skip = action is not None and action.nargs != 0 and "=" not in t
        else:
            found.append(t)
    return found


def swapped_data(parser: argparse.ArgumentParser, tokens: list[str]) -> str | None:
    """Why a verb's first positional argument is a data file (``quantize calib.npz model.onnx``), or None.

    The text names the file and the command line to type: the model first (both models for ``evaluate`` and
    ``compare``), the data with ``--data`` (a verb without it reads a model alone).
    """
    if not any(not a.option_strings for a in parser._actions):
        return None
    positionals = _positionals(parser, tokens)
    if not positionals or not positionals[0].lower().endswith(DATA_SUFFIXES):
        return None
    data = positionals[0]
    if "--data" not in parser._option_string_actions:  # inspect, convert: a model and nothing else
        return f"{data} is data, not a model: {parser.prog} reads a model (MODEL.onnx)"
    model = next((p for p in positionals[1:] if p.lower().endswith(MODEL_SUFFIXES)), None)
    if sum(1 for a in parser._actions if not a.option_strings) > 1:  # evaluate, compare: two models
        seen = f" and {model} a model: the arguments look swapped" if model is not None else ", not a model"
        return (f"{data} is data{seen}; give the two models first and the data with --data: "
                f"{parser.prog} FLOAT.onnx QUANTIZED.onnx --data {data}")
    if model is not None:
        return (f"{data} is data and {model} a model: the arguments look swapped; give the model first and the "
                f"data with --data: {parser.prog} {model} --data {data}")
    return (f"{data} is data, not a model: give the model first (MODEL.onnx) and the data with --data: "
            f"{parser.prog} MODEL.onnx --data {data}")


def unknown_options(parser: argparse.ArgumentParser, tokens: list[str]) -> list[str]:
    """The ``--name`` tokens of a verb's command line (``tokens``, after the verb; none after a ``--``) that
    ``parser`` has no option of (``--datas``); a ``--name=value`` token counts by its name."""
    found = []
    for t in tokens:
        if t == "--":
            break
        if t.startswith("--") and t.split("=", 1)[0] not in parser._option_string_actions:
            found.append(t)
    return found


def unrecognized(parser: argparse.ArgumentParser, extras: list[str], data: str | None = None) -> str:
    """The one-line message for arguments ``parser`` does not know: a close option name for a mistyped one
    (``--datas``: did you mean --data?), ``--data`` for a stray data file."""
    import difflib  # only for a usage error: a plain command does not load it

    options = [o for o in parser._option_string_actions if o.startswith("--")]
    for token in extras:
        if token.startswith("--"):
            name = token.split("=", 1)[0]
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}?" if close else "the options are listed in the help"
            return f"unrecognized option {name}: {hint}"
    stray = " ".join(extras)
    if len(extras) == 1 and extras[0].lower().endswith(DATA_SUFFIXES) and not data and "--data" in options:
        return f"unrecognized argument {stray}: did you mean --data {stray}?"
    return f"unrecognized arguments: {stray}"
