"""Word features of the stacked detector on crafted examples: words as exact character intervals, lexical and
number support (Unicode digits included), copied phrases, neighbourhoods, member columns."""

from __future__ import annotations

import numpy as np
import pytest

from ragtruth_spans.detectors.stacked.context_index import ContextIndex
from ragtruth_spans.detectors.stacked.context_index import sentences as split_sentences
from ragtruth_spans.detectors.stacked.features import BASE_FEATURES, member_columns, word_features
from ragtruth_spans.detectors.stacked.text import normalise, number_value, stem, words


def features_of(context: str, response: str, task: str = "Summary", question: str | None = None) -> dict:
    spans = words(response)
    matrix = word_features(response, spans, ContextIndex.build(context, question), task=task,
                           sentences=split_sentences(response))
    return {response[a:b]: dict(zip(BASE_FEATURES, row.tolist())) for (a, b), row in zip(spans, matrix)}


def test_words_are_exact_character_intervals_and_keep_inner_punctuation():
    text = "The family-owned café opened 1,200 rooms at 9:30 — it's 3.5\r\nstars 👍 ok."
    spans = words(text)
    assert [text[a:b] for a, b in spans] == ["The", "family-owned", "café", "opened", "1,200", "rooms", "at",
                                             "9:30", "it's", "3.5", "stars", "ok"]
    assert all(0 <= a < b <= len(text) for a, b in spans)


def test_normalisation_reads_unicode_digits_and_numbers_canonically():
    assert normalise("١٩٩٩") == normalise("１９９９") == normalise("𝟏𝟗𝟗𝟗") == "1999"
    assert number_value("1,200") == number_value("1200.0") == "1200"
    assert number_value("rooms") is None
    assert stem("opened") == stem("opening") == "open"


def test_supported_and_unsupported_words():
    f = features_of("The Grand Hotel opened in 1999 on the harbour front.",
                    "The Grand Hotel opened in 1998 and offers a luxurious spa.")
    assert f["Grand"]["in_context"] == 1.0 and f["Grand"]["ngram"] >= 5  # "The Grand Hotel opened in" is copied
    assert f["1998"]["is_number"] == 1.0 and f["1998"]["number_in_context"] == 0.0
    assert f["1998"]["fuzzy"] == pytest.approx(0.75)  # one digit off "1999"
    assert f["luxurious"]["in_context"] == 0.0 and f["luxurious"]["ngram"] == 1.0
    assert f["luxurious"]["unsupported_3"] > f["Grand"]["unsupported_3"]
    assert f["Grand"]["task_Summary"] == 1.0 and f["Grand"]["task_QA"] == 0.0


def test_unicode_digits_in_the_response_match_ascii_in_the_context():
    f = features_of("Founded in 1999.", "Founded in ١٩٩٩.")
    assert f["١٩٩٩"]["number_in_context"] == 1.0


def test_question_words_count_as_support_and_are_flagged():
    f = features_of("Passage: it is blue.", "The sky is blue.", task="QA", question="What colour is the sky?")
    assert f["sky"]["in_question"] == 1.0 and f["sky"]["in_context"] == 1.0


def test_sentence_features_follow_the_sentence_of_each_word():
    f = features_of("Cats sleep a lot.", "Cats sleep a lot. Dogs fly rockets daily.")
    assert f["Cats"]["sentence_unsupported"] == 0.0
    assert f["rockets"]["sentence_unsupported"] == 1.0
    assert f["Dogs"]["sentence_position"] == 0.5


def test_an_empty_response_has_no_rows():
    assert word_features("", [], ContextIndex.build("ctx"), task="QA", sentences=[]).shape == (0, len(BASE_FEATURES))


def test_member_columns_take_the_word_maximum_and_neighbourhood_means():
    response = "aa bb cc"
    scores = np.zeros(len(response), dtype=np.float32)
    scores[3:5] = 0.9
    cols = member_columns(words(response), scores)
    assert cols[:, 0].tolist() == pytest.approx([0.0, 0.9, 0.0])
    assert cols[0, 1] == pytest.approx(0.3)


def test_the_sentence_similarity_column_comes_from_the_real_minilm_encoder():
    from ragtruth_spans.detectors.base import DetectItem
    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder
    from ragtruth_spans.detectors.stacked.columns import ColumnBuilder

    builder = ColumnBuilder(SentenceEncoder())
    item = DetectItem(context="The museum opens at nine. Entry is free on Sundays.",
                      response="The museum opens at nine. Penguins enjoy jazz music.", task="Summary")
    (cols,) = builder.build([item])
    cosine = cols.matrix[:, BASE_FEATURES.index("sentence_cosine")]
    first, last = cosine[0], cosine[-1]
    assert first > 0.95 and last < 0.5


def test_words_of_json_keys_whose_value_is_false_or_null_are_marked():
    context = ('{"name": "Blue Cafe", "attributes": {"RestaurantsReservations": false, "OutdoorSeating": true, '
               '"WiFi": "no", "Music": null}}')
    f = features_of(context, "Blue Cafe takes reservations, has outdoor seating, free wifi and music.",
                    task="Data2txt")
    assert f["reservations"]["false_key"] == 1.0 and f["reservations"]["true_key"] == 0.0
    assert f["outdoor"]["true_key"] == 1.0 and f["outdoor"]["false_key"] == 0.0
    assert f["wifi"]["false_key"] == 1.0 and f["music"]["false_key"] == 1.0
    assert features_of(context, "It has Wi-Fi.", task="Data2txt")["Wi-Fi"]["false_key"] == 1.0
    assert features_of("plain text, not JSON", "reservations")["reservations"]["false_key"] == 0.0


CONFLICTS = ("swap", "swap_one_side", "negation_added", "negation_dropped")


def flagged(context: str, response: str) -> dict[str, set[str]]:
    """Per conflict column, the response words it marks."""
    features = features_of(context, response)
    return {name: {w for w, row in features.items() if row[name]} for name in CONFLICTS}


@pytest.mark.parametrize(("context", "response", "column", "marked"), [
    ("The restaurant opened in 1999 and serves Italian food.",
     "The restaurant opened in 1998 and serves Italian food.", "swap", {"1998"}),
    ("The restaurant opened in 1999.", "It opened in 1998.", "swap_one_side", {"1998"}),
    ("Revenue rose 12% in 2023, said CEO John Smith.", "Revenue rose 15% in 2023, said CEO Jane Smith.", "swap",
     {"15", "Jane"}),
    ("Sales increased by 5 percent last year.", "Sales decreased by 5 percent last year.", "swap", {"decreased"}),
    ("The museum is open on Sundays.", "The museum is not open on Sundays.", "negation_added", {"not", "open"}),
    ("The museum is not open on Sundays.", "The museum is open on Sundays.", "negation_dropped", {"open"}),
    ("The museum isn't open on Sundays.", "The museum is open on Sundays.", "negation_dropped", {"open"}),
])
def test_conflict_columns_mark_what_the_context_contradicts(context, response, column, marked):
    assert flagged(context, response)[column] == marked


def test_conflict_columns_stay_silent_on_copied_or_reordered_text():
    context = "Sales increased by 5 percent last year. The museum is not open on Sundays."
    for response in ("Sales increased by 5 percent last year.", "Last year sales increased by 5 percent.",
                     "The museum is not open on Sundays.", "It has a garden."):
        assert not any(flagged(context, response).values()), response
    features = features_of(context, "Sales decreased by 5 percent. It has a garden.")
    assert features["decreased"]["sentence_conflict"] == features["percent"]["sentence_conflict"] == 1.0
    assert features["garden"]["sentence_conflict"] == 0.0


@pytest.mark.parametrize(("context", "response"), [
    ("This is not a review. This is a summary of it.", "Here is a summary."),           # a stop word, said both ways
    ("The gallery is not open on Mondays. It is open on Sundays.", "It is open on Sundays."),  # said both ways
    ("Be careful not to break the sprouts.", "Take care, being careful not to break them."),  # negated here too
    ("Gravy is not usually used in cooking.", "Gravy is usually not used in cooking."),       # the order of the two
])
def test_a_negation_is_not_dropped_where_the_context_also_says_it_or_the_response_negates(context, response):
    assert not flagged(context, response)["negation_dropped"]


def test_a_number_one_digit_edit_away_from_a_context_number_is_marked_near():
    context = "The bridge has carried traffic since 1932. It employs 1,200 people and 7 engineers."
    features = features_of(context, "Traffic since 1923, 2,100 people, 8 engineers, 1932 and 5400.")
    assert {w for w, row in features.items() if row["number_near"]} == {"1923", "2,100"}


def test_support_through_another_form_is_marked():
    f = features_of("The city has 1,500,000 residents and three parks. It is common to buy food there.",
                    "The city has 1.5 million residents and 3 parks. It is not uncommon to purchase food there.")
    assert f["1.5"]["number_in_context"] == 1 and f["1.5"]["synonym_in_context"] == 1
    assert f["3"]["number_in_context"] == 1
    assert f["uncommon"]["synonym_in_context"] == 1 and f["purchase"]["synonym_in_context"] == 1
    assert f["residents"]["synonym_in_context"] == 0  # copied, not a synonym


def test_a_changed_unit_or_reversed_finding_reads_as_a_conflict():
    units = features_of("Each box weighs 12 kilograms.", "Each box weighs 12 pounds.")
    assert units["pounds"]["contrast_in_context"] == 1 and units["pounds"]["swap_one_side"] == 1
    finding = features_of("The survey found that most support shorter days.",
                          "The survey found that most oppose shorter days.")
    assert finding["oppose"]["antonym_in_context"] == 1 and finding["oppose"]["swap"] == 1
    assert finding["most"]["contrast_in_context"] == 0  # the context has this very word


def test_soft_support_comes_from_the_real_minilm_token_embeddings():
    from ragtruth_spans.detectors.base import DetectItem
    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder
    from ragtruth_spans.detectors.stacked.columns import ColumnBuilder

    item = DetectItem(context="The town has 1,500,000 residents. The castle was completed in 1240.",
                      response="The town has 1.5 million inhabitants. The castle was built in 1240 by King Edward I.",
                      task="Summary")
    (cols,) = ColumnBuilder(SentenceEncoder(), token_support=True).build([item])
    soft = dict(zip([item.response[a:b] for a, b in cols.words], cols.matrix[:, BASE_FEATURES.index("soft_support")]))
    assert soft["town"] > 0.8 and soft["inhabitants"] > 0.5  # copied, paraphrased
    assert soft["King"] < 0.4 and soft["Edward"] < 0.4 and soft["inhabitants"] > soft["Edward"] + 0.2
    (plain,) = ColumnBuilder(SentenceEncoder()).build([item])  # off unless the recipe asks for it
    assert not plain.matrix[:, BASE_FEATURES.index("soft_support")].any()


def test_one_anchor_word_is_enough_for_a_contradicting_unit_but_other_forms_of_a_unit_support():
    swapped = features_of("Tickets cost 12 dollars, or 8 dollars for students.", "A student ticket costs 8 euros.")
    assert swapped["euros"]["swap_one_side"] == 1 and swapped["euros"]["contrast_in_context"] == 1
    forms = features_of("Each box weighs 12 kilograms and is 2 metres long.", "Each box weighs 12 kg, 2 meters long.")
    for word in ("kg", "meters"):
        assert forms[word]["synonym_in_context"] == 1, word
        assert not any(forms[word][name] for name in (*CONFLICTS, "contrast_in_context")), word


def test_the_encoder_gives_sentence_transformers_embeddings_without_importing_it():
    import subprocess
    import sys

    import numpy as np
    from sentence_transformers import SentenceTransformer

    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder
    from ragtruth_spans.detectors.shared.encoder_runtime import mean_pooling_layout
    from ragtruth_spans.models.pretrained import MINILM, resolve_model

    encoder = SentenceEncoder()
    texts = ["The castle was completed in 1240.", "A much longer sentence about the town and its 1,500,000 residents.",
             "Short."]
    sentences, pieces = encoder.encode_with_tokens(texts)
    path = resolve_model(MINILM)[0]
    assert mean_pooling_layout(path) == 256 and encoder.model is None
    reference = SentenceTransformer(path, device="cpu").encode(texts, normalize_embeddings=True)
    assert np.allclose(sentences, reference, atol=1e-5) and np.allclose(encoder.encode(texts), reference, atol=1e-5)
    probe = ("import sys; from ragtruth_spans.detectors.shared.encoder import SentenceEncoder; "
             "SentenceEncoder().encode(['a']); print('sentence_transformers' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "False"
    for text, (offsets, embeddings), (offsets2, embeddings2) in zip(texts, pieces, encoder.token_embeddings(texts)):
        assert len(offsets) == len(embeddings) and np.array_equal(offsets, offsets2)
        assert np.allclose(embeddings, embeddings2, atol=1e-5)
        assert text[offsets[0][0]:offsets[0][1]].lower() == text.split()[0].lower()[:offsets[0][1] - offsets[0][0]]


def test_the_parts_of_compound_json_keys_support_the_words_of_a_description():
    context = '{"name": "Spoke", "attributes": {"BusinessAcceptsCreditCards": true, "WheelchairAccessible": true}}'
    f = features_of(context, "Spoke accepts credit cards and is wheelchair accessible.", task="Data2txt")
    for word in ("accepts", "credit", "cards", "wheelchair", "accessible"):
        assert f[word]["in_context"] == 1, word


def test_a_negated_json_key_agrees_with_a_false_value_and_contradicts_a_true_one():
    context = '{"name": "Blue Cafe", "attributes": {"RestaurantsReservations": false, "OutdoorSeating": true}}'
    f = features_of(context, "Blue Cafe does not take reservations and has no outdoor seating.", task="Data2txt")
    assert f["reservations"]["true_key"] == 1.0 and f["reservations"]["false_key"] == 0.0
    assert f["seating"]["false_key"] == 1.0 and f["seating"]["true_key"] == 0.0


def test_a_json_key_is_denied_through_its_clause_and_read_by_its_own_words():
    context = ('{"name": "Blue Cafe", "attributes": {"BusinessParking": {"garage": false, "street": false, '
               '"valet": false, "lot": true}, "RestaurantsGoodForGroups": false, "WiFi": "free"}}')
    denied = features_of(context, "Blue Cafe does not have a garage, street or valet parking, and offers WiFi. "
                         "A lot is not available.", task="Data2txt")
    for word in ("garage", "street", "valet"):  # the negator reaches through the list, not past "and"
        assert denied[word]["true_key"] == 1.0 and denied[word]["false_key"] == 0.0, word
    assert denied["WiFi"]["true_key"] == 1.0  # a new clause: "and offers WiFi" is asserted
    assert denied["lot"]["false_key"] == 1.0  # "is not available" after the word denies it
    asserted = features_of(context, "Blue Cafe is good for groups and has street parking.", task="Data2txt")
    assert asserted["groups"]["false_key"] == 1.0 and asserted["street"]["false_key"] == 1.0
    for word in ("good", "for"):  # parts of a compound key that assert nothing of their own
        assert asserted[word]["false_key"] == 0.0, word


def test_clock_times_of_a_record_support_the_hours_in_words():
    f = features_of('{"hours": {"Monday": "8:0-20:0"}}', "It opens at 8 a.m. and closes at 8 p.m., not 9.",
                    task="Data2txt")
    assert f["8"]["number_in_context"] == 1.0 and f["9"]["number_in_context"] == 0.0


RECORD = ('{"name": "Spoke", "business_stars": 4.5, "review_count": 87, '
          '"review_info": [{"review_stars": 5, "review_text": "Great."}, {"review_stars": 3, "review_text": "Slow."}]}')


@pytest.mark.parametrize(("response", "marked"), [
    ("Spoke is rated 3.5 stars across 87 reviews.", {"3.5"}),       # another rating than the record's
    ("Spoke is rated 4.5 stars across 87 reviews.", set()),          # the record's
    ("Spoke has 120 reviews.", {"120"}),                            # another count
    ("It is rated 4.5 out of 5 stars, from 2 reviews.", set()),     # a scale; the reviews the record lists
    ("A rating of 4.3 out of 5 stars.", {"4.3"}),                   # past the scale, its key word
    ("One reviewer gave it 5 stars, another 3 stars.", set()),      # the reviews' own ratings
    ("Its rating is 4.5. Reviews praise it.", set()),               # the key word is in the next sentence
])
def test_a_number_that_the_json_key_beside_it_does_not_hold_is_a_one_sided_swap(response: str,
                                                                               marked: set[str]) -> None:
    f = features_of(RECORD, response, task="Data2txt")
    assert {w for w, row in f.items() if row["swap_one_side"]} == marked


HOURS = '{"name": "Cafe", "hours": {"Monday": "7:0-14:0", "Friday": "8:0-20:0", "Sunday": "0:0-0:0"}}'


@pytest.mark.parametrize(("response", "marked"), [
    ("On Fridays it closes at 9 p.m. after opening at 8 a.m.", {"9", "p.m", "8", "a.m"}),  # not the record's hours
    ("It opens on Sundays from 7 am to 3 pm.", {"7", "am", "3", "pm"}),                  # a closed day
    ("It opens Mondays from 7 am to 2 pm.", set()),                                      # the record's hours
    ("It is closed on Sundays.", set()),                                                 # days alone are not read
])
def test_times_the_record_hours_contradict_are_one_sided_swaps(response: str, marked: set[str]) -> None:
    f = features_of(HOURS, response, task="Data2txt")
    assert {w for w, row in f.items() if row["swap_one_side"]} == marked


def test_a_name_the_context_holds_elsewhere_reads_as_a_swap_in_a_copied_phrase():
    context = "Ministers will meet in Lisbon in May. Last year's meeting in Vienna ended without a deal."
    assert flagged(context, "Ministers will meet in Vienna in May.")["swap"] == {"Vienna"}
    assert not flagged(context, "Last year's meeting in Vienna ended without a deal.")["swap"]


def test_a_sentence_opening_capital_is_a_name_only_where_the_word_is_capitalised_inside_a_sentence():
    context = "Construction is due to begin in March. The line will run to Fenwick Park."
    assert not any(flagged(context, "Building is due to begin in March.").values())  # two common words, opening
    context = "Tom Reyes scored the winner. The coach said Tom Reyes had trained all week."
    assert flagged(context, "Laura Brenner scored the winner.")["swap_one_side"] == {"Brenner"}
    context = "Pat the steaks dry. 1  Choose a heavy skillet that holds them. 2  Season the steaks with salt."
    assert not any(flagged(context, "1. Heat a heavy skillet that holds them.").values())  # a list item's opening


def test_the_numbers_of_a_numbered_list_are_not_changed_numbers():
    context = "1. Add the wine and cook for 8 minutes.\n2. Add the stock and cook for 20 minutes."
    assert not any(flagged(context, "5. Add the wine and cook for 8 minutes.").values())
    assert flagged(context, "1. Add the wine and cook for 9 minutes.")["swap"] == {"9"}


@pytest.mark.parametrize(("text", "value"), [
    ("two thousand and twelve", "2012"), ("one hundred and twenty-three", "123"), ("twenty five", "25"),
    ("one hundred thousand", "100000"), ("five and six", None), ("one of them", None), ("twenty thirty", None),
])
def test_spelled_numbers_of_several_words_are_read_whole(text, value):
    from ragtruth_spans.detectors.stacked.text import number_phrases

    phrases = number_phrases(text.split())
    assert (set(phrases.values()) == {value} and len(phrases) == len(text.split())) if value else phrases == {}


def test_a_spelled_number_is_a_number_and_agrees_with_its_digits():
    context = "Ferries to Inchmarra leave the harbour three times a week. The crossing saves 9,000 journeys a year."
    assert flagged(context, "Ferries to Inchmarra leave the harbour five times a week.")["swap"] == {"five"}
    for response in ("Ferries to Inchmarra leave the harbour 3 times a week.",
                     "The crossing saves nine thousand journeys a year."):
        assert not any(flagged(context, response).values()), response
    f = features_of(context, "Ferries leave the harbour three times a week, saving four hundred and fifty trips.")
    assert f["three"]["is_number"] == 1.0 and f["three"]["number_in_context"] == 1.0
    assert not any(flagged(context, "It saves four hundred and fifty journeys.").values())  # not read part by part


def test_a_negation_before_a_stop_word_or_copied_from_the_context_is_no_added_negation():
    context = "This is the first time he has spoken. She does not want to be involved."
    for response in ("This is not the first time he has spoken.", "She does not want to be involved."):
        assert not flagged(context, response)["negation_added"], response


RESTATED = ("polarity", "contrast_restated", "role_swap", "contrast_graded")


def restated(context: str, response: str) -> dict[str, set[str]]:
    features = features_of(context, response)
    return {name: {w for w, row in features.items() if row[name]} for name in RESTATED}


@pytest.mark.parametrize(("context", "response", "marked"), [
    ("The restaurant offers takeout and delivery.", "The restaurant does not offer takeout.",
     {"not", "offer", "takeout"}),
    ("Dogs are not allowed in the park.", "In the park dogs are allowed.", {"allowed"}),
    ("Portuguese exports rose 4% in the third quarter.", "In the third quarter Portuguese exports fell 4%.",
     {"fell"}),
    ("Reviewers describe the library as a quiet place to read.", "Reviewers call the library a loud place.",
     {"loud"}),
    ("The bath house had four heated rooms, said the archaeologists.", "It had four unheated rooms.",
     {"unheated"}),
    ("The Lumo X2 e-reader has a 7-inch screen. It does not support audiobooks.", "The Lumo X2 supports audiobooks.",
     {"supports", "audiobooks"}),  # the sentence saying so is not the one the response sentence restates
])
def test_polarity_marks_what_the_context_says_the_other_way(context, response, marked):
    assert restated(context, response)["polarity"] == marked


@pytest.mark.parametrize(("context", "response"), [
    ("Hail is not uncommon on the higher slopes.", "Hail is common on the higher slopes."),
    ("The museum is closed on Mondays.", "The museum is not open on Mondays."),
    ("Not only the players but the fans were delighted.", "The fans were delighted."),
    ("Essential amino acids come from food, while nonessential amino acids are made in the body.",
     "The body makes non-essential amino acids, while essential amino acids come from food."),
    ("Some of them escaped. ISIS took thousands of Yazidis captive.", "Many Yazidis were taken captive."),  # entailed
    ("Watching stories does not raise your score.", "No, watching stories does not raise your score."),  # an answer
    ("Loeb sued to prevent Vergara from destroying their two embryos. The embryos should not be destroyed.",
     "Loeb is suing to prevent her from destroying the embryos."),  # a number is no neighbour
])
def test_polarity_stays_silent_on_faithful_negated_antonyms_and_rewordings(context, response):
    assert not restated(context, response)["polarity"]


def test_a_closed_class_word_against_another_of_its_class_in_the_restated_sentence_is_a_contrast():
    context = "A survey of 1,200 nurses found that most respondents favour twelve-hour shifts. Pay rose 3%."
    marked = restated(context, "The nurses survey found a minority of respondents favour twelve-hour shifts.")
    assert marked["contrast_restated"] == {"minority"}
    assert not restated(context, "The nurses survey found the majority of respondents favour twelve-hour shifts.")[
        "contrast_restated"]


def test_a_name_in_the_place_of_another_name_of_the_restated_sentence_is_a_role_swap():
    context = ("Tom Reyes scored in the 88th minute to give Harbour City a win. Eastvale's coach, Laura Brenner, "
               "said her side deserved a draw.")
    assert restated(context, "Harbour City won after Laura Brenner scored in the 88th minute.")["role_swap"] \
        == {"Brenner"}
    assert not restated(context, "Harbour City won after Tom Reyes scored in the 88th minute.")["role_swap"]


def test_a_comparison_the_restated_sentence_reverses_is_a_graded_contrast_and_always_flagged():
    context = ("The recovery was uneven. Sites in sheltered lagoons, where the water stayed slightly cooler, gained "
               "coral fastest, while reefs on the exposed eastern shore showed almost no change.")
    marked = restated(context, "Sheltered lagoons, where the water stayed cooler, recovered slowest.")
    assert marked["contrast_graded"] == {"slowest"} <= marked["contrast_restated"]
    assert not restated(context, "Sheltered lagoons, where the water stayed cooler, recovered fastest.")[
        "contrast_graded"]
    a_minority = restated("A survey found that most nurses favour twelve-hour shifts.",
                          "The survey found a minority of nurses favour twelve-hour shifts.")
    assert a_minority["contrast_restated"] == {"minority"} and not a_minority["contrast_graded"]  # no direction
    from ragtruth_spans.detectors.stacked.columns import RULE_COLUMNS

    assert "contrast_graded" in RULE_COLUMNS


@pytest.mark.parametrize(("response", "marked"), [
    ("The Alder line is slower than the Birch line between the airport and the centre.", {"slower"}),
    ("The Birch line is slower than the Alder line between the airport and the centre.", set()),
    ("Between the airport and the centre the Birch line is slower than the Alder line.", set()),
    ("The Alder line; the Birch line is slower, though it runs later at night.", set()),  # each side its clause
])
def test_a_comparison_said_the_other_way_round_is_no_graded_contrast(response: str, marked: set[str]) -> None:
    context = ("The Alder line is faster than the Birch line between the airport and the centre, but the Birch line "
               "runs later at night.")
    assert restated(context, response)["contrast_graded"] == marked
