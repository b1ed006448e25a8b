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
* ``disagreements`` — our decision differs from the NINCO authors' (after ``review import`` of their logs).
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
    return found


TILE_FIELDS = ("ground_truth", "predicted_class", "msp")  # shown on grid tiles: truth, model's class, its MSP


def save_views(dataset) -> list[str]:
    """Save (overwrite) the review views of ``dataset``; drop our views that no longer apply. Returns names.

    Also shows :data:`TILE_FIELDS` on the grid tiles (unless the dataset's App config already chose
    fields): the full top-5 stays one click away in the sample's sidebar.
    """
    _show_on_tiles(dataset)
    wanted = review_views(dataset)
    for name in dataset.list_saved_views():
        if name not in wanted and _is_ours(dataset, name):
            dataset.delete_saved_view(name)
    for name, (view, description) in wanted.items():
        dataset.save_view(name, view, description=f"{description} [{OURS}]", overwrite=True)
    return list(wanted)


def _is_ours(dataset, name: str) -> bool:
    return OURS in (dataset.get_saved_view_info(name).get("description") or "")


def _show_on_tiles(dataset) -> None:
    from fiftyone.core.odm.dataset import ActiveFields

    if dataset.app_config.active_fields is None:
        schema = dataset.get_field_schema()
        dataset.app_config.active_fields = ActiveFields(paths=[f for f in TILE_FIELDS if f in schema])
        dataset.save()
