"""Vision: what the outline cannot say — a DOM-confidence score and annotated screenshots."""

from ._confidence import LOW_CONFIDENCE, DomConfidence, measure_dom_confidence

__all__ = ["LOW_CONFIDENCE", "DomConfidence", "measure_dom_confidence"]
