"""Running models over built datasets: models.py (load a timm / torchvision / user model, its weights
and its eval preprocessing) and predict.py (a dataset split -> the outputs file ``score`` reads)."""

from .models import MODEL_FORMS, LoadedModel, WeightsSource, load_model, resolve_weights
from .predict import PredictOptions, predict

__all__ = [
    "MODEL_FORMS",
    "LoadedModel",
    "PredictOptions",
    "WeightsSource",
    "load_model",
    "predict",
    "resolve_weights",
]
