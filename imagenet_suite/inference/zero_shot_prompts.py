"""The prompts of a zero-shot head (:mod:`~imagenet_suite.inference.zero_shot`): class names, templates, the
limits of a templates file, and the check of every prompt against the text encoder's context.

* **Prompt sets** (:func:`parse_prompts`): ``openai80`` (CLIP's 80 ImageNet templates), ``photo`` ("a photo
  of a {}", LCA-on-the-Line and NINCO), ``taxonomy[:depth]`` (LCA-on-the-Line App. G.1,
  :func:`taxonomy_prompt`) or a FILE of templates, one per line with one ``{}``.
* **A templates file is bounded** (:func:`read_templates`), before any model is loaded: at most
  :data:`MAX_PROMPTS_FILE_BYTES` bytes (checked before it is read), :data:`MAX_TEMPLATES` templates and
  :data:`MAX_TEMPLATE_CHARS` characters a template. CLIP's 80 ImageNet templates (2.6 KB, at most 35
  characters) are the largest set in use; every template is 1,000 prompts through the text tower, so the
  cost of a head grows with the templates (its memory does not: :class:`ClassPrompts` makes each class's
  prompts when they are encoded, and the encoder takes ``text_batch_size`` prompts at a time).
* **Every prompt fits the context** (:func:`check_context`), checked with the model's own tokenizer before
  the model is built or any image read. open_clip cuts a text to the text encoder's context (77 tokens for
  CLIP), keeping its end token: a template whose class name falls beyond it gives every class the same text
  embedding (1000 equal logits), so it is refused, naming the template (``file line N`` for a templates
  file), its token count and the context. A prompt that loses only text *after* the class name is encoded
  as open_clip cuts it, with one warning line naming the template.
* **Class names** (:data:`CLASS_NAMES`): ``clip`` (CLIP's curated list) or ``wordnet`` (first lemmas).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, param
from ..files import decode_text

_LOG = logging.getLogger(__name__)

PROMPT_SETS = ("openai80", "photo", "taxonomy")
PHOTO_TEMPLATE = "a photo of a {}"
TAXONOMY_LINK = ", which is a type of "
DEFAULT_TAXONOMY_DEPTH = 2
CLASS_NAMES = {
    "clip": "the curated names of CLIP's ImageNet notebook (Radford et al. 2021; open_clip's IMAGENET_CLASSNAMES)",
    "wordnet": "the first WordNet lemma of each class (timm's imagenet_synset_to_lemma.txt)",
}
INSTALL = "install the zeroshot extra (`pip install imagenet-suite[zeroshot]`, or `uv sync --extra zeroshot`)"

MAX_PROMPTS_FILE_BYTES = 64 << 10
"""A templates file's largest size (64 KiB), checked before it is read: 25 times CLIP's 80 templates (2.6 KB),
so that tokenising a head's prompts (the file's text × 1000 classes) costs at most 25 times theirs."""
MAX_TEMPLATES = 1000
"""The most templates a file may hold: 12.5 times CLIP's 80, the largest set in use (each is 1,000 prompts)."""
MAX_TEMPLATE_CHARS = 1000
"""A template's longest length in characters: about three times what a 77-token context holds in English."""
MAX_WARNINGS = 5
"""Templates cut after the class name that are named in a warning line each; the others are counted."""
BOUNDARY_SLACK = 2
"""Tokens a tokenizer may gain where a template's text meets the class name (the name counted apart):
within this margin of the context, the filled prompt itself is tokenised."""


def import_open_clip() -> Any:
    """The ``open_clip`` module; ConfigError saying how to install it when it is missing."""
    try:
        import open_clip
    except ImportError as err:
        raise ConfigError(f"open_clip models need open-clip-torch, which is not installed: {INSTALL}") from err
    return open_clip


# -- prompt sets and templates files ------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompts:
    """A parsed prompt set: ``kind`` ``openai80``, ``photo``, ``taxonomy`` or ``file``; ``depth`` (taxonomy:
    ancestors after the class name); ``templates`` (a file's templates) and ``lines`` (the line of each in the
    file); ``text``: how the record names it."""

    kind: str
    depth: int | None = None
    templates: tuple[str, ...] = ()
    text: str = ""
    lines: tuple[int, ...] = ()

    def where(self, index: int) -> str:
        """How an error names template ``index``: ``prompts file F line N``, ``prompts openai80 template 3``.

        Example:
            >>> Prompts("file", templates=("a {}.",), text="file:t.txt", lines=(4,)).where(0)
            'prompts file t.txt line 4'
            >>> Prompts("openai80", text="openai80").where(2)
            'prompts openai80 template 3'
        """
        if self.kind == "file" and index < len(self.lines):
            return f"prompts file {self.text.removeprefix('file:')} line {self.lines[index]}"
        return f"prompts {self.text or self.kind} template {index + 1}"


def parse_prompts(spec: str) -> Prompts:
    """``openai80``, ``photo``, ``taxonomy``, ``taxonomy:<depth>`` or the path of a templates file (read
    now, :func:`read_templates`); ConfigError naming ``prompts`` otherwise.

    Example:
        >>> parse_prompts("taxonomy:3").depth, parse_prompts("taxonomy").depth, parse_prompts("photo").kind
        (3, 2, 'photo')
        >>> parse_prompts("taxonomy:0")
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: prompts 'taxonomy:0': the depth must be a whole number ≥ 1 (ancestors after the class name)
    """
    if spec in ("openai80", "photo"):
        return Prompts(spec, text=spec)
    name, colon, depth = spec.partition(":")
    if name == "taxonomy":
        if colon and not (depth.isdigit() and int(depth) >= 1):
            raise ConfigError(
                f"{param('prompts')} {spec!r}: the depth must be a whole number ≥ 1 (ancestors after the class name)"
            )
        value = int(depth) if colon else DEFAULT_TAXONOMY_DEPTH
        return Prompts("taxonomy", depth=value, text=f"taxonomy:{value}")
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(
            f"{param('prompts')} {spec!r} is not one of {', '.join(PROMPT_SETS)}, taxonomy:<depth>, nor a file of "
            "templates (one per line, each with one {})"
        )
    numbered = template_lines(path)
    return Prompts(
        "file",
        templates=tuple(template for _, template in numbered),
        text=f"file:{path}",
        lines=tuple(line for line, _ in numbered),
    )


def read_templates(path: str | Path) -> tuple[str, ...]:
    """The templates of a prompts file: one per non-blank line (whitespace at the ends removed), each with
    exactly one ``{}`` where the class name goes and no other brace; ConfigError naming the line. The file is
    bounded (:data:`MAX_PROMPTS_FILE_BYTES`, :data:`MAX_TEMPLATES`, :data:`MAX_TEMPLATE_CHARS`): a larger one
    is refused, naming the file and the limit, its size before a byte is read.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "templates.txt"
        >>> _ = path.write_text("a photo of a {}.\\n\\n  a drawing of the {}.  \\n")
        >>> read_templates(path)
        ('a photo of a {}.', 'a drawing of the {}.')
        >>> _ = path.write_text("a photo of a {c}.\\n")
        >>> read_templates(path)
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: prompts file ...templates.txt line 1: 'a photo of a {c}.' must hold exactly one {} (the class name) and no other brace
    """
    return tuple(template for _, template in template_lines(path))


def template_lines(path: str | Path) -> list[tuple[int, str]]:
    """``(line number, template)`` of each template of a prompts file (:func:`read_templates`)."""
    path = Path(path)
    limits = (
        f"at most {MAX_PROMPTS_FILE_BYTES:,} bytes, {MAX_TEMPLATES:,} templates of at most {MAX_TEMPLATE_CHARS:,} "
        "characters; CLIP's 80 ImageNet templates are 2.6 KB"
    )
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            data = handle.read(MAX_PROMPTS_FILE_BYTES + 1)  # never more than the limit, even if the file grew
    except OSError as err:
        raise ConfigError(f"prompts file {path} cannot be read ({err})") from err
    if max(size, len(data)) > MAX_PROMPTS_FILE_BYTES:
        raise ConfigError(
            f"prompts file {path} is {max(size, len(data)):,} bytes, more than a prompts file may hold ({limits})"
        )
    text = decode_text(data, f"prompts file {path}", "prompt templates, one per line", ConfigError)
    templates: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if len(line) > MAX_TEMPLATE_CHARS:
            raise ConfigError(
                f"prompts file {path} line {number}: a template of {len(line):,} characters, more than "
                f"{MAX_TEMPLATE_CHARS:,} ({limits})"
            )
        if line.count("{}") != 1 or line.replace("{}", "").count("{") or line.replace("{}", "").count("}"):
            raise ConfigError(
                f"prompts file {path} line {number}: {line!r} must hold exactly one {{}} (the class name) and no other brace"
            )
        if len(templates) == MAX_TEMPLATES:
            raise ConfigError(f"prompts file {path} line {number}: more than {MAX_TEMPLATES:,} templates ({limits})")
        templates.append((number, line))
    if not templates:
        raise ConfigError(f"prompts file {path} holds no template (one per line, each with one {{}})")
    return templates


def class_names(source: str) -> tuple[str, ...]:
    """The 1000 ImageNet-1k class names of ``source`` (:data:`CLASS_NAMES`), in class-index order.

    Example:
        WordNet's first lemmas repeat where CLIP's curated list tells the classes apart (``"crane bird"``
        and ``"construction crane"`` there):

        >>> names = class_names("wordnet")
        >>> names[:2], names[134], names[517]
        (('tench', 'goldfish'), 'crane', 'crane')
    """
    if source == "clip":
        return tuple(import_open_clip().IMAGENET_CLASSNAMES)
    if source == "wordnet":
        from ..classes import imagenet_wnids, readable_name

        return tuple(readable_name(wnid) for wnid in imagenet_wnids())
    raise ConfigError(f"{param('class_names')} {source!r} is not one of {', '.join(CLASS_NAMES)}")


def taxonomy_prompt(name: str, class_index: int, depth: int) -> str:
    """LCA-on-the-Line (Shi et al. 2024, App. G.1)'s "A, which is a type of B, which is a type of C" for one
    class: its ``name``, then its ``depth`` nearest ancestors in the ImageNet-1k WordNet tree shipped with
    the package (parent first; the root, ``physical_entity``, never), each as its synset's first lemma.

    The paper names neither the ancestors (its "dalmatian, ... dog, ... animal" skips some) nor a wrapper
    around the sentence: here they are consecutive, and the sentence is the whole prompt.

    Example:
        >>> taxonomy_prompt("Dalmatian", 251, 2)
        'Dalmatian, which is a type of dog, which is a type of canine'
        >>> taxonomy_prompt("tench", 0, 1)
        'tench, which is a type of cyprinid'
    """
    from ..hierarchies.imagenet1k import imagenet1k_tree

    tree = imagenet1k_tree()
    ancestors = tree.ancestors(class_index)[1:-1][:depth]
    words = [tree.node(wnid).name.split(".")[0].replace("_", " ") for wnid in ancestors]
    return TAXONOMY_LINK.join([name, *words])


def templates_of(prompts: Prompts) -> tuple[str, ...]:
    """The templates (``{}`` for the class name) of a template prompt set: CLIP's 80 (open_clip's
    ``OPENAI_IMAGENET_TEMPLATES``, written out), :data:`PHOTO_TEMPLATE`, or a file's."""
    if prompts.kind == "openai80":
        return tuple(template("{}") for template in import_open_clip().OPENAI_IMAGENET_TEMPLATES)
    if prompts.kind == "photo":
        return (PHOTO_TEMPLATE,)
    return prompts.templates


# -- the prompts of each class ------------------------------------------------------------------------------


class ClassPrompts(Sequence):
    """The prompts of each class (class-index order), each row made when it is asked for, so that memory does
    not grow with templates × classes: the templates filled with the class name (``.format``, as open_clip's
    ``build_zero_shot_classifier``), or the class's one taxonomy prompt. ``per_class``: prompts per class;
    :meth:`sha256`: :func:`prompts_digest` of the rows, computed once.

    Example:
        >>> rows = ClassPrompts(Prompts("file", templates=("a {}.", "art of the {}.")), ["tench", "goldfish"])
        >>> len(rows), rows.per_class, rows[1], rows[:1]
        (2, 2, ('a goldfish.', 'art of the goldfish.'), [('a tench.', 'art of the tench.')])
    """

    def __init__(self, prompts: Prompts, names: Sequence[str]):
        self.names = tuple(names)
        self.templates: tuple[str, ...] | None = None
        self.taxonomy: list[str] | None = None
        if prompts.kind == "taxonomy":
            self.taxonomy = [taxonomy_prompt(name, index, int(prompts.depth)) for index, name in enumerate(names)]
        else:
            self.templates = templates_of(prompts)
        self._sha256: str | None = None

    @property
    def per_class(self) -> int:
        return 1 if self.templates is None else len(self.templates)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self)))]
        name = self.names[index]
        if self.taxonomy is not None:
            return (self.taxonomy[index],)
        return tuple(template.format(name) for template in self.templates)

    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = prompts_digest(iter(self))
        return self._sha256


def prompt_texts(prompts: Prompts, names: Sequence[str]) -> list[tuple[str, ...]]:
    """The prompts of each class (class-index order), as a list: :class:`ClassPrompts` made whole.

    Example:
        >>> prompt_texts(parse_prompts("photo"), ["tench", "goldfish"])
        [('a photo of a tench',), ('a photo of a goldfish',)]
        >>> prompt_texts(Prompts("file", templates=("a {}.", "art of the {}.")), ["tench"])
        [('a tench.', 'art of the tench.')]
    """
    return list(ClassPrompts(prompts, names))


def prompts_digest(prompts) -> str:
    """sha256 of the prompt texts: the JSON of the per-class lists, in class order (``json.dumps`` of the list
    of lists, written row by row so that the rows need not all be in memory).

    Example:
        >>> rows = [("a tench",), ("a goldfish", "the goldfish")]
        >>> prompts_digest(rows) == hashlib.sha256(json.dumps([list(row) for row in rows]).encode()).hexdigest()
        True
    """
    if isinstance(prompts, ClassPrompts):
        return prompts.sha256()
    digest = hashlib.sha256(b"[")
    for number, row in enumerate(prompts):
        digest.update(((", " if number else "") + json.dumps(list(row), ensure_ascii=False)).encode())
    digest.update(b"]")
    return digest.hexdigest()


# -- the context of the text encoder ------------------------------------------------------------------------


def token_counter(tokenizer: Any) -> Callable[[Sequence[str]], list[int]] | None:
    """How many tokens each text is before ``tokenizer`` (one of open_clip's) cuts it to its context, start and
    end tokens included, counted as the tokenizer's own call counts them; None for a tokenizer of another kind.

    Example:
        >>> from open_clip.tokenizer import SimpleTokenizer
        >>> count = token_counter(SimpleTokenizer())
        >>> count(["a photo of a dog.", ""])  # <start> a photo of a dog . <end>; <start> <end>
        [8, 2]
    """
    from open_clip import tokenizer as tokenizers

    if isinstance(tokenizer, tokenizers.SimpleTokenizer):  # CLIP's BPE: <start> + encode(text) + <end>
        return lambda texts: [len(tokenizer.encode(text)) + 2 for text in texts]
    inner = getattr(tokenizer, "tokenizer", None)
    if isinstance(tokenizer, getattr(tokenizers, "HFTokenizer", ())) and inner is not None:
        clean = tokenizer.clean_fn
        if getattr(tokenizer, "tokenizer_mode", "") == "clips":  # its own <bos>, <eos> and class token
            return lambda texts: [
                len(ids) + 3
                for ids in inner([clean(t) for t in texts], add_special_tokens=False, truncation=False)["input_ids"]
            ]
        return lambda texts: [len(ids) for ids in inner([clean(t) for t in texts], truncation=False)["input_ids"]]
    if isinstance(tokenizer, getattr(tokenizers, "SigLipTokenizer", ())) and inner is not None:
        clean = lambda text: tokenizers.canonicalize_text(tokenizers.basic_clean(text))  # noqa: E731
        return lambda texts: [len(ids) for ids in inner([clean(t) for t in texts], truncation=False)["input_ids"]]
    return None


def check_context(tokenizer: Any, prompts: Prompts, names: Sequence[str], model: str) -> list[str]:
    """Check every prompt of ``prompts`` × ``names`` against the context of ``model``'s text encoder, with
    its ``tokenizer``, before the model is built: ConfigError (one line naming the template, the prompt's
    token count, where its class name ends and the context) when a class name would be cut off; a warning
    line for each template that loses only text after the class name (returned, and logged: the first
    :data:`MAX_WARNINGS`, then how many more).

    Where a class name ends is counted on the template's text before ``{}`` filled with the name; a
    template is filled with every name only when the template's parts and the longest names come within
    :data:`BOUNDARY_SLACK` tokens of the context, the longest names first. A tokenizer that drops tokens by
    its own reduction (CLIPA's) rather than cutting the end gets no prompt longer than the context.

    Example:
        A context of 10 tokens: "a {}." with "tench" is 6 (``<start> a ten ch . <end>``); the next template's
        prompt is 11, and its first 10 hold the class name (the "." is cut: a warning); the last one's
        class name needs 12 (refused).

        >>> from open_clip.tokenizer import SimpleTokenizer
        >>> tokenizer = SimpleTokenizer(context_length=10)
        >>> file = lambda template: Prompts("file", templates=(template,), text="file:t.txt", lines=(3,))
        >>> check_context(tokenizer, file("a {}."), ["tench"], "m")
        []
        >>> check_context(tokenizer, file("a very very very very nice {}."), ["tench"], "m")
        ["prompts file t.txt line 3: 'a very very very very nice tench.' is 11 tokens, more than the 10-token context of m's text encoder: the text after its token 10 is cut off (the class name is kept), as open_clip cuts it"]
        >>> check_context(tokenizer, file("a very very very very very very nice {}."), ["tench"], "m")
        Traceback (most recent call last):
        ...
        imagenet_suite.errors.ConfigError: prompts file t.txt line 3: the class name falls beyond the 10-token context of m's text encoder: 'a very very very very very very nice tench.' is 13 tokens and keeps its class name only in its first 12 (<start> and <end> included), so open_clip would cut the name off and every class would get the same text; shorten the template or put {} nearer its start
    """
    count = token_counter(tokenizer)
    context = getattr(tokenizer, "context_length", None)
    if count is None or not context:
        note = f"{model}: the prompts are not checked against the text encoder's context ({type(tokenizer).__name__})"
        _LOG.warning(note)
        return [note]
    context = int(context)
    cuts_end = getattr(tokenizer, "reduction_fn", None) is None
    specials = count([""])[0]
    name_tokens = [tokens - specials for tokens in count(list(names))]
    longest_first = sorted(range(len(names)), key=lambda index: -name_tokens[index])
    if prompts.kind == "taxonomy":
        return _check_taxonomy(count, ClassPrompts(prompts, names), name_tokens, specials, context, model, cuts_end)
    warnings = []
    for index, template in enumerate(templates_of(prompts)):
        before, after = template.split("{}")
        before_tokens, after_tokens = (tokens - specials for tokens in count([before, after]))
        slack = BOUNDARY_SLACK if before else 0
        for name in longest_first:  # the class name must end within the context
            if specials + before_tokens + name_tokens[name] + slack <= context:
                break
            head = count([before + names[name]])[0]
            if head > context:
                text = before + names[name] + after
                raise ConfigError(_beyond(prompts.where(index), text, count([text])[0], head, context, model))
        slack += BOUNDARY_SLACK if after else 0
        for name in longest_first:  # the whole prompt: past the context, only text after the name is lost
            if specials + before_tokens + name_tokens[name] + after_tokens + slack <= context:
                break
            text = before + names[name] + after
            tokens = count([text])[0]
            if tokens > context and not cuts_end:
                raise ConfigError(_reduced(prompts.where(index), text, tokens, context, model))
            if tokens > context:
                warnings.append(_cut(prompts.where(index), text, tokens, context, model))
                break
    for warning in warnings[:MAX_WARNINGS]:
        _LOG.warning(warning)
    if len(warnings) > MAX_WARNINGS:
        _LOG.warning("%d more templates are cut after the class name as well", len(warnings) - MAX_WARNINGS)
    return warnings


def _check_taxonomy(count, rows: ClassPrompts, name_tokens, specials, context, model, cuts_end) -> list[str]:
    """:func:`check_context` for taxonomy prompts: one per class, its name first."""
    tokens = count([row[0] for row in rows])
    for index, total in enumerate(tokens):
        head = specials + name_tokens[index]
        where = f"prompts taxonomy, class {index} ({rows.names[index]!r})"
        if head > context:
            raise ConfigError(_beyond(where, rows[index][0], total, head, context, model))
        if total > context and not cuts_end:
            raise ConfigError(_reduced(where, rows[index][0], total, context, model))
    cut = [index for index, total in enumerate(tokens) if total > context]
    if not cut:
        return []
    first = cut[0]
    warning = _cut(
        f"prompts taxonomy ({len(cut)} of the {len(rows)} classes, e.g. class {first})",
        rows[first][0],
        tokens[first],
        context,
        model,
    )
    _LOG.warning(warning)
    return [warning]


def _beyond(where: str, text: str, tokens: int, head: int, context: int, model: str) -> str:
    return (
        f"{where}: the class name falls beyond the {context}-token context of {model}'s text encoder: "
        f"{_short(text)} is {tokens} tokens and keeps its class name only in its first {head} (<start> and <end> "
        "included), so open_clip would cut the name off and every class would get the same text; shorten the "
        "template or put {} nearer its start"
    )


def _reduced(where: str, text: str, tokens: int, context: int, model: str) -> str:
    return (
        f"{where}: {_short(text)} is {tokens} tokens, more than the {context}-token context of {model}'s text "
        "encoder, whose tokenizer drops tokens of its own choice (a reduction mask), the class name's perhaps; "
        "shorten the template"
    )


def _cut(where: str, text: str, tokens: int, context: int, model: str) -> str:
    return (
        f"{where}: {_short(text)} is {tokens} tokens, more than the {context}-token context of {model}'s text "
        f"encoder: the text after its token {context} is cut off (the class name is kept), as open_clip cuts it"
    )


def _short(text: str, most: int = 80) -> str:
    """``text`` quoted, its middle elided when it is longer than ``most`` characters."""
    if len(text) <= most:
        return repr(text)
    return repr(text[: most // 2] + " … " + text[-(most // 2) :])


__all__ = [
    "CLASS_NAMES",
    "MAX_PROMPTS_FILE_BYTES",
    "MAX_TEMPLATES",
    "MAX_TEMPLATE_CHARS",
    "PROMPT_SETS",
    "ClassPrompts",
    "Prompts",
    "check_context",
    "class_names",
    "parse_prompts",
    "prompt_texts",
    "prompts_digest",
    "read_templates",
    "taxonomy_prompt",
    "templates_of",
    "token_counter",
]
