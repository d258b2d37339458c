"""Closed word classes shared by the synthetic-data generator and the stacked detector's support and conflict
columns: synonyms (faithful paraphrase), antonyms and reversed trends (contradiction), units, quantity words,
months and weekdays (a different member of the same class contradicts), number words and scales.

All entries are lower-case. :func:`contrast_class` says which closed class a word belongs to; a class is made of
senses, each with its forms (``kilograms``, ``kg``), so two words of *different senses* of one class
(``kilograms`` / ``pounds``, ``most`` / ``few``, ``Monday`` / ``Thursday``) read as a contradiction
(:func:`contradicting`), two forms of one sense (:func:`same_sense`) and :data:`SYNONYMS` pairs as support.

>>> contrast_class("kilograms") == contrast_class("pounds")
True
>>> are_synonyms("purchase", "buy")
True
"""

from __future__ import annotations

_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("said", "stated", "noted", "reported"), ("say", "state"), ("says", "states"),
    ("big", "large", "sizeable"), ("small", "little", "modest"), ("start", "begin"), ("started", "began", "launched"),
    ("starts", "begins"), ("end", "finish"), ("ended", "finished", "concluded"), ("help", "assist", "aid"),
    ("helped", "assisted"), ("buy", "purchase"), ("bought", "purchased"), ("show", "reveal", "indicate"),
    ("showed", "revealed", "indicated"), ("shows", "reveals", "indicates"), ("people", "individuals", "persons"),
    ("children", "kids"), ("car", "vehicle"), ("cars", "vehicles"), ("shop", "store"), ("shops", "stores"),
    ("about", "approximately", "around", "roughly"), ("fast", "quick", "rapid"), ("quickly", "rapidly"),
    ("main", "primary", "principal"), ("important", "significant", "key"),
    ("used", "utilised", "employed"), ("get", "obtain", "receive"), ("got", "obtained", "received"),
    ("need", "require"), ("needs", "requires"), ("needed", "required"), ("try", "attempt"), ("tried", "attempted"),
    ("enough", "sufficient"), ("whole", "entire"), ("often", "frequently"), ("also", "additionally"),
    ("because", "since"), ("but", "however"), ("near", "close"), ("home", "house"), ("homes", "houses"),
    ("job", "position"), ("jobs", "positions"), ("company", "firm"), ("companies", "firms"),
    ("goal", "aim", "objective"), ("choose", "select"), ("chose", "selected"), ("find", "discover"),
    ("found", "discovered"), ("build", "construct"), ("built", "constructed"), ("make", "create"),
    ("made", "created"), ("allow", "permit", "let"), ("allowed", "permitted"), ("allows", "permits"),
    ("maybe", "perhaps"), ("nearly", "almost"), ("rich", "wealthy"), ("sick", "ill"), ("doctor", "physician"),
    ("doctors", "physicians"), ("students", "pupils"), ("area", "region"), ("areas", "regions"),
    ("town", "municipality"), ("kind", "type"), ("kinds", "types"), ("answer", "response"), ("problem", "issue"),
    ("problems", "issues"), ("officials", "authorities"), ("died", "passed away"),
    ("hurt", "injured"), ("pay", "salary"), ("price", "cost"), ("prices", "costs"), ("cheap", "inexpensive"),
    ("friendly", "welcoming"), ("tasty", "delicious"), ("meal", "dish"), ("meals", "dishes"),
    ("staff", "employees", "workers"), ("owner", "proprietor"), ("offers", "provides"), ("offer", "provide"),
    ("offered", "provided"), ("plan", "scheme"), ("plans", "schemes"), ("rule", "regulation"),
    ("rules", "regulations"), ("law", "legislation"), ("study", "research"), ("survey", "poll"),
    ("scientists", "researchers"), ("increase", "rise"), ("increased", "rose", "grew"), ("decrease", "decline"),
    ("decreased", "declined", "fell"), ("later", "subsequently"), ("before", "prior"), ("currently", "presently"),
    ("country", "nation"), ("countries", "nations"), ("road", "street"), ("movie", "film"), ("movies", "films"),
    ("talk", "speak"), ("talked", "spoke"), ("ask", "request"), ("asked", "requested"), ("tell", "inform"),
    ("told", "informed"), ("keep", "retain"), ("kept", "retained"), ("stop", "halt"), ("stopped", "halted"),
    ("worldwide", "globally"), ("annual", "yearly"), ("daily", "everyday"), ("thrice", "three"),
)
_ANTONYM_PAIRS: tuple[tuple[str, str], ...] = (
    ("increase", "decrease"), ("increased", "decreased"), ("increases", "decreases"), ("higher", "lower"),
    ("more", "less"), ("before", "after"), ("open", "closed"), ("opened", "closed"), ("allowed", "banned"),
    ("rise", "fall"), ("rose", "fell"), ("rises", "falls"), ("rising", "falling"), ("largest", "smallest"),
    ("first", "last"), ("won", "lost"), ("win", "lose"), ("wins", "loses"), ("approved", "rejected"),
    ("approve", "reject"), ("positive", "negative"), ("early", "late"), ("earlier", "later"), ("north", "south"),
    ("east", "west"), ("good", "poor"), ("cheap", "expensive"), ("support", "oppose"), ("supported", "opposed"),
    ("supports", "opposes"), ("accept", "refuse"), ("accepted", "refused"), ("agree", "disagree"),
    ("agreed", "disagreed"), ("safe", "dangerous"), ("success", "failure"), ("successful", "unsuccessful"),
    ("gain", "loss"), ("gained", "lost"), ("profit", "loss"), ("strong", "weak"), ("stronger", "weaker"),
    ("larger", "smaller"), ("bigger", "smaller"), ("better", "worse"), ("best", "worst"), ("faster", "slower"),
    ("older", "younger"), ("oldest", "youngest"), ("above", "below"), ("up", "down"), ("grew", "shrank"),
    ("expanded", "contracted"), ("improved", "worsened"), ("improve", "worsen"), ("included", "excluded"),
    ("include", "exclude"), ("public", "private"), ("legal", "illegal"), ("true", "false"), ("always", "never"),
    ("easy", "difficult"), ("easier", "harder"), ("full", "empty"), ("hot", "cold"), ("warmer", "colder"),
    ("young", "old"), ("new", "old"), ("increasing", "decreasing"), ("growth", "decline"), ("high", "low"),
    ("maximum", "minimum"), ("inside", "outside"), ("indoor", "outdoor"), ("arrived", "departed"),
    ("buy", "sell"), ("bought", "sold"), ("import", "export"), ("imports", "exports"), ("wet", "dry"),
    ("entered", "left"), ("hired", "fired"), ("raised", "lowered"), ("raise", "lower"), ("lowest", "highest"),
    ("majority", "minority"), ("victory", "defeat"), ("ally", "enemy"), ("allies", "enemies"),
    ("benefit", "harm"), ("benefits", "harms"), ("helpful", "harmful"), ("likely", "unlikely"),
    ("possible", "impossible"), ("common", "rare"), ("available", "unavailable"), ("friendly", "hostile"),
)
_GRADABLE_ANTONYMS: tuple[tuple[str, str], ...] = (
    # adjectives whose comparative and superlative contradict in the same way (:func:`_graded` makes them)
    ("fast", "slow"), ("quick", "slow"), ("high", "low"), ("large", "small"), ("big", "small"), ("long", "short"),
    ("tall", "short"), ("wide", "narrow"), ("thick", "thin"), ("heavy", "light"), ("deep", "shallow"),
    ("strong", "weak"), ("rich", "poor"), ("cheap", "dear"), ("early", "late"), ("hot", "cold"), ("warm", "cool"),
    ("loud", "quiet"), ("young", "old"), ("hard", "soft"), ("easy", "hard"), ("dark", "light"), ("near", "far"),
    ("safe", "risky"), ("busy", "quiet"), ("dry", "wet"), ("clean", "dirty"), ("healthy", "sick"),
    ("happy", "sad"), ("calm", "rough"), ("bright", "dim"), ("fresh", "stale"), ("tight", "loose"),
)
_MORE_ANTONYMS: tuple[tuple[str, str], ...] = (
    ("northern", "southern"), ("eastern", "western"), ("northeast", "southwest"), ("northwest", "southeast"),
    ("upper", "lower"), ("inner", "outer"), ("permanent", "temporary"), ("present", "absent"), ("right", "wrong"),
    ("major", "minor"), ("optimistic", "pessimistic"), ("encouraging", "disappointing"), ("guilty", "innocent"),
    ("alive", "dead"), ("awake", "asleep"), ("noisy", "quiet"), ("simple", "complex"), ("ancient", "modern"),
    ("domestic", "foreign"), ("internal", "external"), ("male", "female"), ("urban", "rural"),
    ("voluntary", "compulsory"), ("optional", "mandatory"), ("optional", "compulsory"), ("covered", "uncovered"),
    ("frequent", "rare"), ("frequently", "rarely"), ("common", "uncommon"), ("cheaper", "dearer"),
    ("expensive", "inexpensive"), ("more", "fewer"), ("most", "least"), ("less", "more"), ("fewer", "more"),
    ("increase", "reduce"), ("increased", "reduced"), ("increases", "reduces"), ("increase", "cut"),
    ("increased", "cut"), ("climbed", "fell"), ("climbed", "dropped"), ("rose", "dropped"), ("grew", "fell"),
    ("climb", "fall"), ("climbs", "falls"), ("jumped", "fell"), ("surged", "plunged"), ("soared", "slumped"),
    ("backs", "undermines"), ("back", "undermine"), ("backed", "opposed"), ("backs", "opposes"),
    ("confirm", "deny"), ("confirmed", "denied"), ("confirms", "denies"), ("praised", "criticised"),
    ("praised", "criticized"), ("praise", "criticise"), ("like", "dislike"), ("liked", "disliked"),
    ("love", "hate"), ("loved", "hated"), ("appear", "disappear"), ("appeared", "disappeared"),
    ("add", "remove"), ("added", "removed"), ("arrive", "leave"), ("start", "stop"), ("started", "stopped"),
    ("starts", "stops"), ("began", "ended"), ("lend", "borrow"), ("lent", "borrowed"), ("sell", "buy"),
    ("sold", "bought"), ("sells", "buys"), ("push", "pull"), ("enter", "exit"), ("over", "under"),
    ("upstairs", "downstairs"), ("ascend", "descend"), ("acquitted", "convicted"), ("won", "lost"),
    ("victory", "defeat"), ("friend", "enemy"), ("ban", "allow"), ("banned", "permitted"), ("bans", "allows"),
    ("forbidden", "allowed"), ("prohibited", "allowed"), ("forbids", "allows"), ("prohibits", "allows"),
    ("accepts", "rejects"), ("accepting", "rejecting"), ("approves", "rejects"), ("passed", "failed"),
    ("pass", "fail"), ("succeeded", "failed"), ("maximum", "minimum"), ("top", "bottom"),
    ("heated", "unheated"), ("paid", "unpaid"), ("beginning", "end"), ("before", "since"), ("inside", "outside"),
    ("indoors", "outdoors"), ("import", "export"), ("imported", "exported"), ("daytime", "night-time"),
    ("day", "night"), ("morning", "evening"), ("summer", "winter"), ("spring", "autumn"),
    ("encourage", "discourage"), ("encouraged", "discouraged"), ("include", "omit"), ("included", "omitted"),
    ("boost", "cut"), ("boosted", "cut"), ("raised", "cut"), ("lifted", "cut"), ("expand", "shrink"),
    ("expanded", "shrank"), ("widened", "narrowed"), ("strengthened", "weakened"), ("gained", "shed"),
    ("hired", "laid off"), ("ahead", "behind"), ("gain", "drop"), ("increase", "drop"), ("rise", "drop"),
)
_NEGATING_PREFIXES = ("un", "non", "non-")
_ADJECTIVE_PREFIXES = ("in", "im", "il", "ir", "dis")
_ADJECTIVE_ENDINGS = ("able", "ible", "al", "ent", "ant", "ive", "ate", "ete", "ect", "lar", "est", "ure", "ous")
_NOT_PREFIXED = frozenset({"less", "till", "ion", "ited", "der", "ions"})


def _graded(word: str) -> tuple[str, str]:
    """The comparative and superlative of a one- or two-syllable adjective by the spelling rules (``big`` →
    ``bigger``, ``biggest``; ``early`` → ``earlier``, ``earliest``; ``late`` → ``later``, ``latest``)."""
    if word.endswith("e"):
        return word + "r", word + "st"
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return word[:-1] + "ier", word[:-1] + "iest"
    vowels = "aeiou"
    if len(word) <= 4 and word[-1] not in vowels + "wxy" and word[-2] in vowels and word[-3:-2] not in tuple(vowels):
        return word + word[-1] + "er", word + word[-1] + "est"
    return word + "er", word + "est"


def _antonym_table() -> dict[str, frozenset[str]]:
    pairs = list(_ANTONYM_PAIRS) + list(_MORE_ANTONYMS)
    for a, b in _GRADABLE_ANTONYMS:
        pairs.append((a, b))
        pairs.extend(zip(_graded(a), _graded(b)))
    table: dict[str, set[str]] = {}
    for a, b in pairs:
        table.setdefault(a, set()).add(b)
        table.setdefault(b, set()).add(a)
    return {w: frozenset(others) for w, others in table.items()}


def _prefix_negated(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with a negating prefix (``unheated``, ``non-toxic``; ``in``/``im``/``il``/``ir``/
    ``dis`` only before adjective endings: ``invisible``, ``illegal``, ``dishonest``, not ``inform``)."""
    if len(a) < 4 or a in _NOT_PREFIXED or not b.endswith(a):
        return False
    prefix = b[: len(b) - len(a)]
    return prefix in _NEGATING_PREFIXES or (prefix in _ADJECTIVE_PREFIXES and a.endswith(_ADJECTIVE_ENDINGS))


_CONTRAST_CLASSES: dict[str, tuple[tuple[str, ...], ...]] = {
    # each class is a tuple of senses; each sense the forms of one meaning (spellings, abbreviations, singular and
    # plural), which support each other: only two *senses* of one class contradict (kg / kilograms do not)
    "mass": (("kilograms", "kilogram", "kg", "kgs", "kilos", "kilo"), ("grams", "gram"),
             ("pounds", "pound", "lbs", "lb"), ("ounces", "ounce", "oz"), ("tons", "ton", "tonnes", "tonne"),
             ("stone", "stones")),
    "length": (("kilometres", "kilometers", "kilometre", "kilometer", "km", "kms"), ("miles", "mile"),
               ("metres", "meters", "metre", "meter"), ("feet", "foot", "ft"), ("yards", "yard", "yd"),
               ("inches", "inch"), ("centimetres", "centimeters", "centimetre", "centimeter", "cm"),
               ("millimetres", "millimeters", "millimetre", "millimeter", "mm")),
    "volume": (("litres", "liters", "litre", "liter"), ("gallons", "gallon"),
               ("millilitres", "milliliters", "millilitre", "milliliter", "ml"), ("pints", "pint"), ("cups", "cup")),
    "time": (("seconds", "second", "secs", "sec"), ("minutes", "minute", "mins", "min"),
             ("hours", "hour", "hrs", "hr"), ("days", "day"), ("weeks", "week"), ("months", "month"),
             ("years", "year", "yrs"), ("decades", "decade"), ("centuries", "century")),
    "money": (("dollars", "dollar", "usd"), ("euros", "euro", "eur"), ("pounds sterling",), ("yen",),
              ("yuan", "renminbi"), ("rupees", "rupee"), ("francs", "franc"), ("cents", "cent"),
              ("pence", "penny", "pennies")),
    "temperature": (("celsius", "centigrade"), ("fahrenheit",), ("kelvin",)),
    "area": (("acres", "acre"), ("hectares", "hectare"), ("square miles",), ("square kilometres",)),
    "scale": (("thousand",), ("million",), ("billion",), ("trillion",), ("hundred",)),
    "quantity": (("most", "majority"), ("few",), ("many", "numerous"), ("some", "several"), ("all",), ("none",),
                 ("minority",), ("half",), ("dozens",), ("hundreds",), ("thousands",), ("millions",)),
    "frequency": (("always",), ("usually", "generally", "typically", "normally"), ("often", "frequently"),
                  ("sometimes", "occasionally"), ("rarely", "seldom"), ("never",), ("daily",), ("weekly",),
                  ("monthly",), ("annually", "yearly")),
    "month": (("january", "jan"), ("february", "feb"), ("march",), ("april", "apr"), ("may",), ("june",),
              ("july",), ("august", "aug"), ("september", "sept", "sep"), ("october", "oct"),
              ("november", "nov"), ("december", "dec")),
    "weekday": (("monday",), ("tuesday", "tues"), ("wednesday",), ("thursday", "thurs"), ("friday",),
                ("saturday",), ("sunday",)),
    "multiple": (("twice", "double", "doubled"), ("thrice", "triple", "tripled"), ("quadrupled",), ("halved",)),
    "trend": (("rose", "rise", "rises", "risen", "rising", "grew", "grow", "grows", "grown", "growing", "increased",
               "increase", "increases", "increasing", "climbed", "climb", "climbs", "climbing", "jumped", "surged",
               "soared", "expanded", "boosted"),
              ("fell", "fall", "falls", "fallen", "falling", "dropped", "drop", "drops", "dropping", "declined",
               "decline", "declines", "declining", "decreased", "decrease", "decreases", "decreasing", "shrank",
               "shrink", "shrinks", "shrunk", "shrinking", "slumped", "plunged", "slid", "dipped", "sank", "tumbled",
               "reduced", "reduce", "reduces")),
    "ordinal": (("first",), ("second",), ("third",), ("fourth",), ("fifth",), ("sixth",), ("seventh",),
                ("eighth",), ("ninth",), ("tenth",), ("last", "final")),
}
REGION_ABBREVIATIONS: dict[str, str] = {
    # US states and Canadian provinces as postal codes write them (a JSON record's "state": "AZ")
    "AL": "Alabama", "AK": "Alaska", "AZ": "Arizona", "AR": "Arkansas", "CA": "California", "CO": "Colorado",
    "CT": "Connecticut", "DE": "Delaware", "FL": "Florida", "GA": "Georgia", "HI": "Hawaii", "ID": "Idaho",
    "IL": "Illinois", "IN": "Indiana", "IA": "Iowa", "KS": "Kansas", "KY": "Kentucky", "LA": "Louisiana",
    "ME": "Maine", "MD": "Maryland", "MA": "Massachusetts", "MI": "Michigan", "MN": "Minnesota",
    "MS": "Mississippi", "MO": "Missouri", "MT": "Montana", "NE": "Nebraska", "NV": "Nevada",
    "NH": "New Hampshire", "NJ": "New Jersey", "NM": "New Mexico", "NY": "New York", "NC": "North Carolina",
    "ND": "North Dakota", "OH": "Ohio", "OK": "Oklahoma", "OR": "Oregon", "PA": "Pennsylvania",
    "RI": "Rhode Island", "SC": "South Carolina", "SD": "South Dakota", "TN": "Tennessee", "TX": "Texas",
    "UT": "Utah", "VT": "Vermont", "VA": "Virginia", "WA": "Washington", "WV": "West Virginia", "WI": "Wisconsin",
    "WY": "Wyoming", "DC": "District of Columbia", "AB": "Alberta", "BC": "British Columbia", "MB": "Manitoba",
    "NB": "New Brunswick", "NL": "Newfoundland and Labrador", "NS": "Nova Scotia", "ON": "Ontario",
    "PE": "Prince Edward Island", "QC": "Quebec", "SK": "Saskatchewan",
}
"""Upper-case region codes → names: a context holding the code (written upper-case, as a word of its own)
supports the name's words."""
NUMBER_WORDS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
}
SCALES: dict[str, int] = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000,
                          "trillion": 1_000_000_000_000}

SYNONYMS: dict[str, frozenset[str]] = {}
for _group in _SYNONYM_GROUPS:
    for _word in _group:
        SYNONYMS[_word] = SYNONYMS.get(_word, frozenset()) | frozenset(w for w in _group if w != _word)
ANTONYMS: dict[str, frozenset[str]] = _antonym_table()
"""Every listed antonym of a word (``fell``: ``rose``, ``climbed``, ``grew``...), with the comparatives and
superlatives of :data:`_GRADABLE_ANTONYMS` (``faster`` / ``slower``)."""
ANTONYMS_EXTENDED: dict[str, str] = {}
"""One antonym per word (the first listed): what the generator puts in a word's place."""
for _a, _b in (*_ANTONYM_PAIRS, *_MORE_ANTONYMS):
    ANTONYMS_EXTENDED.setdefault(_a, _b)
    ANTONYMS_EXTENDED.setdefault(_b, _a)
GRADED: frozenset[str] = frozenset(
    {form for pair in _GRADABLE_ANTONYMS for word in pair for form in _graded(word)}
    | {"more", "less", "fewer", "most", "least", "better", "worse", "best", "worst", "earlier", "later", "cheaper",
       "dearer", "older", "younger", "oldest", "youngest"})
"""Comparatives and superlatives (``faster``, ``smallest``, ``more``, ``fewer``): a comparison's direction."""
_SENSE_OF: dict[str, tuple[str, int]] = {w: (name, k) for name, senses in _CONTRAST_CLASSES.items()
                                         for k, forms in enumerate(senses) for w in forms}
"""Each word's ``(class, sense)``; a word of two classes (``second``: time and ordinal) keeps the later one."""


def contrast_class(word: str) -> str | None:
    """The closed class (``mass``, ``month``, ``quantity``...) of a lower-case word, None for other words."""
    sense = _SENSE_OF.get(word)
    return None if sense is None else sense[0]


def same_sense(a: str, b: str) -> bool:
    """Whether two lower-case words are forms of one sense of a closed class (``kg`` / ``kilograms``,
    ``metres`` / ``meters``, ``most`` / ``majority``): they support each other.

    >>> same_sense("kg", "kilograms"), same_sense("kg", "pounds")
    (True, False)
    """
    sense = _SENSE_OF.get(a)
    return sense is not None and sense == _SENSE_OF.get(b)


def other_forms(word: str) -> tuple[str, ...]:
    """The other forms of ``word``'s sense (``kg`` for ``kilograms``; empty for a word of no class)."""
    sense = _SENSE_OF.get(word)
    return () if sense is None else tuple(w for w in _CONTRAST_CLASSES[sense[0]][sense[1]] if w != word)


def contrasting(word: str) -> tuple[str, ...]:
    """The forms of the *other* senses of ``word``'s closed class (what would contradict it; empty for a word of
    no class).

    >>> "pounds" in contrasting("kg"), "kilograms" in contrasting("kg")
    (True, False)
    """
    sense = _SENSE_OF.get(word)
    if sense is None:
        return ()
    name, own = sense
    return tuple(w for k, forms in enumerate(_CONTRAST_CLASSES[name]) if k != own for w in forms)


def are_synonyms(a: str, b: str) -> bool:
    """Whether two lower-case words are listed as synonyms (symmetric)."""
    return b in SYNONYMS.get(a, ())


STRENGTH: dict[str, int] = {
    **dict.fromkeys(("all", "always"), 5),
    **dict.fromkeys(("most", "majority", "usually", "generally", "typically", "normally"), 4),
    **dict.fromkeys(("many", "numerous", "dozens", "hundreds", "thousands", "millions", "often", "frequently"), 3),
    **dict.fromkeys(("some", "several", "sometimes", "occasionally"), 2),
}
"""How much a quantity or frequency word asserts at least: a claim no stronger than the context's word is what
that word entails (``many`` against ``most``, ``thousands`` against ``many``, ``usually`` against ``always``)."""
DOWNWARD = frozenset({"few", "minority", "none", "rarely", "seldom", "never"})
"""Quantity and frequency words that deny (against an asserting one they contradict, but for ``some``)."""


def entails(b: str, a: str) -> bool:
    """Whether the context's quantity or frequency word ``b`` says at least what the claim's ``a`` says
    (:data:`STRENGTH`).

    >>> entails("thousands", "many"), entails("some", "many"), entails("always", "often")
    (True, False, True)
    """
    return a in STRENGTH and b in STRENGTH and STRENGTH[b] >= STRENGTH[a]


def contradicting(a: str, b: str) -> bool:
    """Whether a claim's lower-case word ``a`` contradicts the word ``b`` it stands for in the context: listed
    antonyms (and their comparatives and superlatives), a word and its negating-prefix form (``heated`` /
    ``unheated``), or two members of one closed class (units of one dimension, months...). Quantity and frequency
    words contradict only where ``a`` claims more than ``b`` (:data:`STRENGTH`), or one denies what the other
    asserts beyond ``some`` (:data:`DOWNWARD`).

    >>> contradicting("slowest", "fastest"), contradicting("heated", "unheated"), contradicting("form", "inform")
    (True, True, False)
    >>> contradicting("most", "many"), contradicting("many", "most"), contradicting("many", "thousands")
    (True, False, False)
    >>> contradicting("few", "many"), contradicting("several", "few"), contradicting("always", "usually")
    (True, False, True)
    """
    if a == b:
        return False
    if b in ANTONYMS.get(a, ()) or _prefix_negated(a, b) or _prefix_negated(b, a):
        return True
    if a in STRENGTH and b in STRENGTH:
        return not entails(b, a)
    if (a in DOWNWARD and STRENGTH.get(b) == 2) or (b in DOWNWARD and STRENGTH.get(a) == 2):
        return False
    sa, sb = _SENSE_OF.get(a), _SENSE_OF.get(b)
    return sa is not None and sb is not None and sa[0] == sb[0] and sa[1] != sb[1]

TITLES: tuple[str, ...] = ("King", "Queen", "Dr.", "Professor", "President", "Sir", "General", "Mayor", "Senator",
                           "Bishop", "Prince")
FIGURE_TEMPLATES: tuple[str, ...] = (
    "at a cost of ${n} million", "a rise of {n} percent", "affecting some {n},000 people", "with {n} percent more "
    "visitors than last year", "worth about {n} million euros", "up {n} percent on the year before",
    "drawing {n},000 spectators", "in just {n} days", "with a budget of {n} million dollars",
    "about {n} percent of the total")
RECOMMENDATIONS: tuple[str, ...] = (
    "Visitors are advised to book well in advance.", "Experts recommend checking with a doctor first.",
    "Residents should avoid the area until further notice.", "It is best to arrive early to avoid the queues.",
    "Readers should compare prices before buying.", "Officials urge everyone to get vaccinated.",
    "Parents are encouraged to keep children indoors.", "Investors should diversify their portfolios.",
    "The authors recommend further study before any policy change.", "Customers are advised to call ahead.",
    "Travellers should carry their passports at all times.", "Anyone affected should contact their insurer.",
)
JSON_CLAIMS: tuple[str, ...] = ("It offers {}.", "The place also has {}.", "Guests can enjoy {} there.",
                                "It is known for its {}.", "They provide {}.")
AMENITIES: tuple[str, ...] = ("valet parking", "free Wi-Fi", "outdoor seating", "live music", "a children's menu",
                              "a rooftop terrace", "home delivery", "a drive-through", "a happy hour",
                              "wheelchair access", "a full bar", "gluten-free options", "a private dining room",
                              "late-night hours", "a loyalty programme", "catering services")
STOPLIKE_NAMES: frozenset[str] = frozenset({"the", "this", "that", "there", "these", "those", "however", "but",
                                            "and", "in", "on", "at", "for", "it", "he", "she", "they", "we"})
