"""Best-of-N answer selection by detected hallucinations: choosing among candidates (:mod:`.select`) and measuring
the choice on a labelled corpus (:mod:`.corpus`)."""
