"""Detectors: one interface (:mod:`.base`), one loader (:mod:`.loader`), one folder or module per family."""

from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.loader import load_detector

__all__ = ["DetectItem", "Detection", "Detector", "load_detector"]
