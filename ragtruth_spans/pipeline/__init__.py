"""Commands that chain the stages: ``predict`` over a file (:mod:`.predict`) and the ``quickstart``."""
