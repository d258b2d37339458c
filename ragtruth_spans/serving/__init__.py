"""The detector as an HTTP service (``ragtruth-spans serve``): the FastAPI app (:mod:`.app`), its request and
response models (:mod:`.models`), the micro-batcher that gathers concurrent requests into one ``detect_batch`` call
(:mod:`.batcher`) and the request limits (:mod:`.limits`). FastAPI is imported only when this package is."""
