"""The saved views a reviewer works through (they appear in the App's view menu, top left).

Views are stored as queries, so they follow the decisions live: a sample tagged ``ood`` leaves
``unreviewed`` at the next refresh. Saved (and re-saved, idempotently) by :func:`save_views`:

* ``unreviewed`` — no decision tag yet;
* ``contamination_candidates`` — OOD samples whose model MSP is at least the dataset's threshold
  (the model calls an ImageNet-1k class with high confidence), most confident first;
* ``by_predicted_imagenet_class`` — samples grouped by the ImageNet-1k class the model predicts,
  most confident first within a group;
* ``class: <name>`` — one per OOD class (OOD datasets with classes), most ImageNet-like first;
* ``decided_id`` / ``decided_ood`` / ``unsure`` — samples tagged with that decision;
* ``conflicting_decisions`` — samples carrying two decision tags (to resolve before export);
* ``disagreements`` — our decision differs from the NINCO authors' (after ``review import`` of their logs);

with the signals of :mod:`.signals` / :mod:`.lookalikes` / another reviewer's table:

* ``most_id_like: <detector>`` — per detector that ran, OOD samples by its score, most ID-like first;
* ``precheck_suspects`` — samples of classes the WordNet pre-check flags (``categorical suspect`` or
  ``close relative``), categorical suspects first;
* ``failed_unit_tests`` — samples of classes whose FPR@95 is above the fail threshold for at least one
  detector (``ood_failed_detectors``), most failing detectors first;
* ``detector_disagreements`` — OOD samples that some detectors accept as ID and others do not: the
  number of detectors in ``ood_id_like_for`` is at least 1 and below the number that ran (accept =
  score >= the detector's τ95 with ID outputs, else among its 5 % most ID-like OOD samples); most
  accepting detectors first;
* ``reviewer_disagreements`` — samples both reviewers decided with different decisions, or both
  classified with different contamination types (ours: the tags; theirs: ``review_other_*``);
* ``lookalike_suspects`` — OOD samples by their cosine similarity to the nearest ImageNet reference
  image, most similar first; ``lookalikes: <row id>`` — for the most similar ones, the sample followed
  by its nearest ImageNet reference images (a similarity-sorted view of the Brain index).

Every view but ``lookalikes: <row id>`` leaves the reference images (``is_reference``) out.
"""

from __future__ import annotations

from .decision_table import DECISIONS

OURS = "imagenet-suite"  # marker in the description of every view this module saves


def decision_tag_count():
    """Expression: how many decision tags a sample carries."""
    from fiftyone import ViewField as F

    return F("tags").filter(F().is_in(list(DECISIONS))).length()


def review_views(dataset) -> dict[str, tuple[object, str]]:
    """``{name: (view, description)}`` for ``dataset`` as it is now (fields present, logs imported)."""
    from fiftyone import ViewExpression
    from fiftyone import ViewField as F

    info = dataset.info.get("imagenet_suite", {})
    schema = dataset.get_field_schema()
    threshold = float(info.get("threshold", 0.5))
    everything = dataset
    dataset = dataset.match(F("is_reference") != True) if "is_reference" in schema else dataset  # noqa: E712
    found = {
        "unreviewed": (dataset.match(decision_tag_count() == 0), "no decision tag yet"),
        "decided_id": (dataset.match_tags("id"), "decided: contains an ImageNet-1k object"),
        "decided_ood": (dataset.match_tags("ood"), "decided: no ImageNet-1k object"),
        "unsure": (dataset.match_tags("unsure"), "decided: unsure"),
        "conflicting_decisions": (dataset.match(decision_tag_count() > 1), "two decision tags: keep one"),
    }
    predicted = bool(info.get("outputs"))  # model outputs were loaded
    ranked = dataset.sort_by("msp", reverse=True) if predicted else dataset
    if predicted:
        found["contamination_candidates"] = (
            dataset.match((F("is_ood") == True) & (F("msp") >= threshold)).sort_by("msp", reverse=True),  # noqa: E712
            f"OOD samples the model calls an ImageNet-1k class with MSP >= {threshold:g}, most confident first",
        )
        found["by_predicted_imagenet_class"] = (
            dataset.exists("predicted_class").group_by("predicted_class.label", order_by="msp", reverse=True),
            "grouped by the ImageNet-1k class the model predicts",
        )
    if "authors_decision" in schema and dataset.exists("authors_decision").count():
        ours_differs = (decision_tag_count() > 0) & ~ViewExpression({"$in": ["$authors_decision", "$tags"]})
        found["disagreements"] = (
            dataset.exists("authors_decision").match(ours_differs),
            "our decision differs from the NINCO authors' log",
        )
    if info.get("ood_classes"):
        for raw in info["ood_classes"]:
            found[f"class: {raw}"] = (ranked.match(F("ground_truth.raw_label") == raw), f"OOD class {raw}")
    found.update(signal_views(everything, dataset, info, schema))
    return found


SUSPECT_VERDICTS = ("categorical suspect", "close relative")


def signal_views(everything, dataset, info: dict, schema: dict) -> dict[str, tuple[object, str]]:
    """The views of the detector, pre-check, reviewer and look-alike signals present in ``dataset``."""
    from fiftyone import ViewExpression
    from fiftyone import ViewField as F

    from .lookalikes import BRAIN_KEY, VIEWS, lookalike_view
    from .signals import score_field

    found: dict[str, tuple[object, str]] = {}
    ood = dataset.match(F("is_ood") == True)  # noqa: E712
    ran = info.get("detectors", {}).get("ran", [])
    for detector in ran:
        name = score_field(detector)
        found[f"most_id_like: {detector}"] = (
            ood.exists(name).sort_by(name, reverse=True),
            f"OOD samples by the {detector} score, most ID-like first",
        )
    flagged = [c for c, e in (info.get("precheck") or {}).items() if e.get("verdict") in SUSPECT_VERDICTS]
    if "precheck_verdict" in schema and flagged:
        found["precheck_suspects"] = (
            dataset.match(F("precheck_verdict").is_in(list(SUSPECT_VERDICTS))).sort_by(
                F("precheck_verdict") == SUSPECT_VERDICTS[0], reverse=True
            ),
            "classes the WordNet pre-check flags (categorical suspects first, then close relatives)",
        )
    if info.get("unit_tests"):
        failed = F("ood_failed_detectors").length()
        found["failed_unit_tests"] = (
            dataset.match(failed > 0).sort_by(failed, reverse=True),
            f"classes whose FPR@95 is above {info['unit_tests']['threshold']:g} for at least one detector",
        )
    if len(ran) > 1:
        accepted = F("ood_id_like_for").length()
        found["detector_disagreements"] = (
            ood.match((accepted > 0) & (accepted < len(ran))).sort_by(accepted, reverse=True),
            "OOD samples accepted as ID by some detectors but not by all "
            f"({info['detectors']['accept_rule']}), most accepting detectors first",
        )
    if info.get("other_review") and "review_other_decision" in schema:
        decision_differs = (
            (F("review_other_decision") != None)  # noqa: E711
            & (decision_tag_count() > 0)
            & ~ViewExpression({"$in": ["$review_other_decision", "$tags"]})
        )
        ours_classified = F("tags").filter(F().starts_with("contamination:")).length() > 0
        contamination_differs = (
            (F("review_other_contamination") != None)  # noqa: E711
            & ours_classified
            & ~ViewExpression({"$in": [{"$concat": ["contamination:", "$review_other_contamination"]}, "$tags"]})
        )
        found["reviewer_disagreements"] = (
            dataset.match(decision_differs | contamination_differs),
            "both reviewers decided (or classified the contamination) differently",
        )
    if BRAIN_KEY in everything.list_brain_runs() and "lookalike_similarity" in schema:
        suspects = ood.exists("lookalike_similarity").sort_by("lookalike_similarity", reverse=True)
        found["lookalike_suspects"] = (
            suspects,
            "OOD samples by cosine similarity to their nearest ImageNet reference image, most similar first",
        )
        for row_id in suspects.limit(VIEWS).values("row_id"):
            found[f"lookalikes: {row_id}"] = (
                lookalike_view(everything, row_id),
                f"OOD sample {row_id} and its nearest ImageNet reference images (Brain index {BRAIN_KEY!r})",
            )
    return found


CARD_FIELD = "card"  # what a grid tile shows: labelled chips "truth: ...", "model: ...", "MSP: ..."
OLD_TILE_FIELDS = ("ground_truth", "predicted_class", "msp")  # shown on tiles before CARD_FIELD (unlabelled chips)
OPENING_VIEWS = ("contamination_candidates", "unreviewed")  # the App opens on the first one saved
HOW_TO_REVIEW = (
    "To review: tick samples (checkbox at a tile's top left), click the tag icon above the grid, type "
    "id / ood / unsure and press Apply; then `uv run imagenet-suite review export {name} --out decisions.csv`."
)


def save_views(dataset) -> list[str]:
    """Save (overwrite) the review views of ``dataset``; drop our views that no longer apply. Returns names.

    Also writes :data:`CARD_FIELD` and shows it on the grid tiles (:func:`show_cards`), and puts
    :data:`HOW_TO_REVIEW` in the description of the view the App opens on (:func:`opening_view`).
    """
    show_cards(dataset)
    wanted = review_views(dataset)
    for name in dataset.list_saved_views():
        if name not in wanted and _is_ours(dataset, name):
            dataset.delete_saved_view(name)
    opening = _opening(dataset, {name: view for name, (view, _) in wanted.items()})
    for name, (view, description) in wanted.items():
        if name == opening:
            description = f"{description}. {HOW_TO_REVIEW.format(name=dataset.name)}"
        dataset.save_view(name, view, description=f"{description} [{OURS}]", overwrite=True)
    return list(wanted)


def opening_view(dataset) -> tuple[str, str] | None:
    """``(name, slug)`` of the saved view the App opens on (:func:`_opening`), or None (the whole dataset).

    The slug is what the App's URL names (``?view=<slug>``, FiftyOne's ``to_slug`` of the name).
    """
    from fiftyone.core.utils import to_slug

    saved = set(dataset.list_saved_views())
    name = _opening(dataset, {n: None for n in OPENING_VIEWS if n in saved})
    return None if name is None else (name, to_slug(name))


def _opening(dataset, candidates: dict) -> str | None:
    """The first of :data:`OPENING_VIEWS` among ``candidates`` (``{name: view or None to load it}``)
    that holds a sample; else the first of them present; else None."""
    present = [name for name in OPENING_VIEWS if name in candidates]
    for name in present:
        view = candidates[name] if candidates[name] is not None else dataset.load_saved_view(name)
        if len(view):
            return name
    return present[0] if present else None


def _is_ours(dataset, name: str) -> bool:
    return OURS in (dataset.get_saved_view_info(name).get("description") or "")


def card_chips(truth: str | None, predicted: str | None, msp: float | None) -> list[str]:
    """The labelled chips of one tile: ``["truth: donuts", "model: waffle iron", "MSP: 0.97"]`` (parts present only).

    Example:
        The MSP is rounded to two decimals (0.9712 -> 0.97); a part that is None is left out:

        >>> card_chips("donuts", "waffle iron", 0.9712)
        ['truth: donuts', 'model: waffle iron', 'MSP: 0.97']
        >>> card_chips("sky", None, None)
        ['truth: sky']
    """
    chips = [f"truth: {truth}"] if truth is not None else []
    chips += [f"model: {predicted}"] if predicted is not None else []
    return chips + ([f"MSP: {msp:.2f}"] if msp is not None else [])


def show_cards(dataset) -> None:
    """Write :data:`CARD_FIELD` (a list of labelled strings, one chip each on a tile) and show it on the tiles.

    FiftyOne draws a field's chip as its bare value ("donuts", "0.970"); the card's chips name what
    they are. The tiles show only the card unless the dataset's App config chose other fields (the
    fields shown before, :data:`OLD_TILE_FIELDS`, are replaced); the fields themselves stay in the sidebar.
    """
    from fiftyone.core.odm.dataset import ActiveFields

    schema = dataset.get_field_schema()
    paths = {name: f"{name}.label" if name != "msp" else name for name in OLD_TILE_FIELDS if name in schema}
    columns = {name: dataset.values(path) for name, path in paths.items()}
    count = len(dataset)
    truth, predicted, msp = (columns.get(name, [None] * count) for name in OLD_TILE_FIELDS)
    dataset.set_values(CARD_FIELD, [card_chips(*parts) for parts in zip(truth, predicted, msp, strict=True)])
    field = dataset.get_field(CARD_FIELD)
    if not field.description:
        field.description = "what a tile shows: the class (truth), the model's class and its MSP"
        field.save()
    active = dataset.app_config.active_fields
    if active is None or set(active.paths) <= set(OLD_TILE_FIELDS):
        dataset.app_config.active_fields = ActiveFields(paths=[CARD_FIELD])
        dataset.save()
