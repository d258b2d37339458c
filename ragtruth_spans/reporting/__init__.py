"""Every rendering of results for people: rich console tables (:mod:`.console`), built from the reports'
``to_dict()`` payloads."""
