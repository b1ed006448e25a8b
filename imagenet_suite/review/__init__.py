"""Contamination review in the FiftyOne App: load, curate, decide, export, rebuild.

FiftyOne is imported lazily, inside functions; :mod:`.decision_table` and :mod:`.rebuild` (used by
``build --decisions``) never import it. Modules:

* :mod:`.decision_table` — the versioned label table ``id, decision, reviewer, timestamp, note``
  plus the contamination taxonomy ``contamination, incidental_mode, imagenet_classes`` (format 2;
  format 1 still read; read, validate, write with its sha256);
* :mod:`.rebuild` — apply a decision table to a build (drop or flag rows);
* :mod:`.database` — which MongoDB FiftyOne uses (the embedded mongod by default, or a loopback or
  unix-socket ``mongodb://`` URI), with journaled writes;
* :mod:`.embedded_db` — the embedded mongod on a private unix socket, one per data folder, kept by
  :mod:`.db_keeper` while any client lives; :mod:`.private_dir` — its 0700 socket folder;
* :mod:`.load` — a built dataset folder (+ model outputs) -> a persistent FiftyOne dataset;
* :mod:`.columns` — which column is the ground truth, readable class names, extra fields;
* :mod:`.documents` — samples written in bulk in FiftyOne's own document layout;
* :mod:`.predictions` — top-5 ImageNet classes, MSP and energy from model outputs;
* :mod:`.signals` — review fields from the scorer: every OOD detector's score, unit-test verdicts,
  the WordNet pre-check per OOD class;
* :mod:`.lookalikes` — ImageNet reference images, a FiftyOne Brain similarity index over the model's
  features, each OOD sample's nearest ImageNet images (:func:`.lookalikes.nearest_id_images`) and an
  embeddings plot;
* :mod:`.views` — the saved views a reviewer works through;
* :mod:`.decisions` — decisions as sample tags, their reviewer/timestamp, export and import;
* :mod:`.ninco_logs` — the NINCO authors' review logs mapped onto our decisions;
* :mod:`.status` — counts per decision and class; :mod:`.agreement` — two reviewers' per-class
  agreement and Cohen's kappa;
* :mod:`.app` — serve the App on loopback with a session token; :mod:`.app_server` — the server
  process; :mod:`.app_guard` — its ASGI middleware (Host, Origin, token/cookie, file paths);
  :mod:`.media_paths` — which files the App may read.
"""
