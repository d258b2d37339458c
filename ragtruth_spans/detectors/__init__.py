"""Detectors: one interface (:mod:`.base`), one loader (:mod:`.loader`) and its options (:mod:`.options`), one
folder or module per family."""

from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.options import DetectorOptions

__all__ = ["DetectItem", "Detection", "Detector", "DetectorOptions", "load_detector"]
