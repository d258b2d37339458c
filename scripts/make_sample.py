"""Write the embedded RAGTruth-format sample:
``ragtruth_spans/data/sample_data/{response,source_info}.jsonl, README.md``.

Every text below is invented for this project (no RAGTruth text is copied). Label offsets are computed with
``str.find`` so they are right by construction, with one deliberate exception (``shift=``) that
``ragtruth-spans prepare`` repairs and reports. Deterministic: running it twice gives identical files.

    python scripts/make_sample.py            # rewrite the files
    python scripts/make_sample.py --check    # exit 1 if the checked-in files differ from what it would write
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "ragtruth_spans" / "data" / "sample_data"

EC, SC = "Evident Conflict", "Subtle Conflict"
EB, SB = "Evident Baseless Info", "Subtle Baseless Info"
META = {EC: "EVIDENT CONFLICT", SC: "SUBTLE CONFLICT", EB: "HIGH INTRO OF NEW INFO", SB: "LOW INTRO OF NEW INFO"}
TEMPERATURES = (0.7, 0.775, 0.85, 0.925, 1.0)


@dataclass
class L:
    """A label: ``text`` must occur in the response; ``occurrence`` picks the n-th (1-based) when it repeats."""

    text: str
    type: str
    occurrence: int | None = None
    implicit_true: bool = False
    due_to_null: bool = False
    shift: int = 0  # the one deliberately wrong offset: start and end moved by this many characters


@dataclass
class R:
    model: str
    response: str
    labels: list[L] = field(default_factory=list)
    quality: str = "good"


# --- QA (MS MARCO style) -------------------------------------------------------------------------------------

QA = [
    dict(split="train", question="how long does it take to boil an egg", passages=[
        "For a soft-boiled egg, simmer for 6 minutes; for a hard-boiled egg, simmer for 10 to 12 minutes. "
        "Cool the eggs in ice water before peeling.",
        "Starting eggs in cold water and bringing them to a boil takes longer, so reduce the simmering time by "
        "about 2 minutes."], responses=[
        R("gpt-4-0613", "A soft-boiled egg needs about 6 minutes of simmering and a hard-boiled egg needs 10 to 12 "
          "minutes. If you start the eggs in cold water, cut about 2 minutes from the simmering time."),
        R("llama-2-7b-chat", "Based on the passages, a hard-boiled egg takes 15 minutes to simmer, while a "
          "soft-boiled egg takes 6 minutes. Adding a pinch of salt to the water makes the eggs easier to peel.",
          [L("15 minutes", EC), L("Adding a pinch of salt to the water makes the eggs easier to peel.", EB)]),
        R("mistral-7B-instruct", "Simmer eggs for 6 minutes for soft-boiled and 10 to 12 minutes for hard-boiled, "
          "then cool them in ice water."),
    ]),
    dict(split="train", question="what is the population of zürich", passages=[
        "Zürich is the largest city in Switzerland, with a population of about 443,000 in the city proper. The "
        "wider metropolitan area is home to roughly 1.4 million people.",
        "The city lies at the northern end of Lake Zürich, and its old town stretches along both banks of the "
        "Limmat river."], responses=[
        R("gpt-3.5-turbo-0613", "Zürich has about 443,000 residents in the city proper and roughly 1.4 million in "
          "its metropolitan area."),
        R("llama-2-13b-chat", "Zürich, the capital of Switzerland, has a population of about 443,000 people, and "
          "its metropolitan area is home to roughly 1.4 million.", [L("the capital of Switzerland", EB)]),
        R("llama-2-70b-chat", "The city proper of Zürich has about 443,000 inhabitants, while the metropolitan area "
          "has roughly 1.2 million.", [L("roughly 1.2 million", EC)]),
    ]),
    dict(split="train", question="why do cats purr", passages=[
        "Cats purr when they are content, but they also purr when they are injured or stressed, which suggests "
        "purring can soothe them.",
        "Purring is produced by the muscles of the larynx, which twitch 25 to 150 times per second."], responses=[
        R("gpt-4-0613", "Cats purr when they are content, but also when injured or stressed, so purring may help "
          "soothe them. The sound comes from laryngeal muscles twitching 25 to 150 times per second."),
        R("llama-2-7b-chat", "Cats purr only when they are happy and relaxed. The sound is made by the muscles of "
          "the larynx, which twitch 25 to 150 times per second.", [L("only when they are happy and relaxed", SC)]),
        R("mistral-7B-instruct", "Cats purr when they are content or stressed, and the sound comes from the larynx "
          "muscles. Studies show that purring at 25 to 150 Hz also helps cats heal broken bones.",
          [L("Studies show that purring at 25 to 150 Hz also helps cats heal broken bones.", EB)]),
    ]),
    dict(split="train", question="what is the boiling point of water in denver", passages=[
        "Denver sits about 1,609 metres (one mile) above sea level, which is why it is called the Mile High City.",
        "At that altitude the lower air pressure makes water boil at roughly 95 °C (203 °F) instead of 100 °C."],
        responses=[
        R("gpt-3.5-turbo-0613", "In Denver, water boils at roughly 95 °C (203 °F) because the city is about one "
          "mile above sea level."),
        R("llama-2-13b-chat", "Water boils at about 95 °C in Denver, the capital of Colorado, because of the lower "
          "air pressure at 1,609 metres.", [L("the capital of Colorado", EB, implicit_true=True)]),
    ]),
    dict(split="train", question="who painted the mona lisa", passages=[
        "The Mona Lisa was painted by Leonardo da Vinci between about 1503 and 1519. It hangs in the Louvre in "
        "Paris.",
        "Leonardo worked on the portrait for many years and never delivered it to the patron who commissioned it."],
        responses=[
        R("gpt-4-0613", "Leonardo da Vinci painted the Mona Lisa, working on it from about 1503 to 1519. It now "
          "hangs in the Louvre in Paris."),
        # The phrase "in 1503" repeats; only the later occurrence is wrong and labelled.
        R("llama-2-70b-chat", "Leonardo da Vinci began the Mona Lisa in 1503. He finished it in 1503 and delivered "
          "it to the patron who commissioned it.",
          [L("in 1503", EC, occurrence=2), L("delivered it to the patron who commissioned it", EC)]),
        R("mistral-7B-instruct", "Unable to answer based on given passages.", quality="incorrect_refusal"),
    ]),
    dict(split="train", question="what is the tallest building in tokyo", passages=[
        "Azabudai Hills Mori JP Tower (麻布台ヒルズ森JPタワー) became the tallest building in Tokyo in 2023 at "
        "325 metres.",
        "Tokyo Skytree, at 634 metres, is a broadcasting tower rather than a building, so it is not counted in "
        "building rankings."], responses=[
        R("gpt-4-0613", "The tallest building in Tokyo is the Azabudai Hills Mori JP Tower (麻布台ヒルズ森JPタワー), "
          "which reached 325 metres in 2023. Tokyo Skytree is taller at 634 metres, but it is a tower, not a "
          "building."),
        R("llama-2-7b-chat", "The tallest building in Tokyo is Tokyo Skytree at 634 metres, completed in 2012.",
          [L("Tokyo Skytree at 634 metres", EC), L("completed in 2012", EB, implicit_true=True)]),
    ]),
    dict(split="train", question="how much caffeine is in a cup of coffee", passages=[
        "An 8-ounce (240 ml) cup of brewed coffee contains about 95 mg of caffeine on average, although it can "
        "range from 70 to 140 mg.",
        "A single shot of espresso has around 63 mg of caffeine."], responses=[
        R("gpt-3.5-turbo-0613", "☕ A typical 8-ounce cup of brewed coffee has about 95 mg of caffeine, with a range "
          "of 70 to 140 mg. A single espresso shot has around 63 mg."),
        R("llama-2-13b-chat", "☕ An 8-ounce cup of coffee contains about 95 mg of caffeine, and a shot of espresso "
          "has around 120 mg. The FDA says up to 400 mg a day is safe for most adults.",
          [L("around 120 mg", EC), L("The FDA says up to 400 mg a day is safe for most adults.", EB,
                                     implicit_true=True)]),
        R("mistral-7B-instruct", "A cup of brewed coffee has roughly 95 mg of caffeine, though the amount can range "
          "from 70 to", quality="truncated"),
    ]),
    dict(split="test", question="when was the eiffel tower built", passages=[
        "The Eiffel Tower was built between 1887 and 1889 as the entrance arch for the 1889 World's Fair in Paris.",
        "Designed by Gustave Eiffel's company, it is 330 metres tall including its antennas."], responses=[
        R("gpt-4-0613", "The Eiffel Tower was built from 1887 to 1889 as the entrance to the 1889 World's Fair in "
          "Paris."),
        R("llama-2-7b-chat", "The Eiffel Tower was built between 1887 and 1891 for the World's Fair and is 300 "
          "metres tall.", [L("between 1887 and 1891", EC), L("300 metres tall", EC)]),
        R("llama-2-70b-chat", "Construction of the Eiffel Tower ran from 1887 to 1889. It was designed by Gustave "
          "Eiffel himself, who climbed to the top on opening day.",
          [L("designed by Gustave Eiffel himself", SC), L("who climbed to the top on opening day", EB)]),
    ]),
    dict(split="test", question="what does a sommelier do", passages=[
        "A sommelier is a trained wine professional who works in restaurants, recommending wines that pair well "
        "with the dishes on the menu.",
        "Sommeliers also manage the wine cellar, build the wine list and train the serving staff."], responses=[
        R("gpt-3.5-turbo-0613", "A sommelier is a wine professional who recommends wines to pair with dishes, "
          "manages the cellar, builds the wine list and trains the staff."),
        R("mistral-7B-instruct", "A sommelier recommends wine pairings, manages the cellar and trains staff. Most "
          "sommeliers must pass the Master Sommelier exam, which has a pass rate below 10%.",
          [L("Most sommeliers must pass the Master Sommelier exam, which has a pass rate below 10%.", EB)]),
    ]),
    dict(split="test", question="is the great wall of china visible from space", passages=[
        "Despite the popular myth, the Great Wall of China (长城) is generally not visible to the naked eye from "
        "low Earth orbit, because it is narrow and similar in colour to the land around it.",
        "Astronauts have photographed it from orbit using zoom lenses."], responses=[
        R("gpt-4-0613", "No. The Great Wall (长城) is too narrow and too similar in colour to its surroundings to be "
          "seen with the naked eye from low Earth orbit, although astronauts have photographed it with zoom "
          "lenses."),
        R("llama-2-13b-chat", "Yes, the Great Wall of China (长城) is the only man-made structure visible from space "
          "with the naked eye.", [L("is the only man-made structure visible from space with the naked eye", EC)]),
        R("llama-2-7b-chat", "The Great Wall is usually not visible from low Earth orbit, but astronauts have "
          "photographed it using zoom lenses."),
    ]),
]

# --- Summary (news style) ------------------------------------------------------------------------------------

SUMMARY = [
    dict(split="train", source="CNN/DM", article=(
        "The city council of Lyon voted on Tuesday to turn three central streets into pedestrian zones from next "
        "spring. The plan, approved by 41 votes to 22, will cost €12 million and includes new bike lanes. Shop "
        "owners on Rue de la République had opposed the scheme, warning that deliveries would become harder. Mayor "
        "Grégory Doucet said the change would cut traffic noise and improve air quality."), responses=[
        R("gpt-4-0613", "Lyon's city council voted 41 to 22 on Tuesday to make three central streets pedestrian "
          "zones from next spring, in a €12 million plan that also adds bike lanes. Shop owners on Rue de la "
          "République opposed it over delivery concerns, while Mayor Grégory Doucet said it would reduce noise "
          "and improve air quality."),
        R("llama-2-7b-chat", "Lyon will turn three central streets into pedestrian zones from next spring after a "
          "council vote of 41 to 22. The €15 million plan includes new bike lanes and was welcomed by shop owners.",
          [L("€15 million", EC), L("was welcomed by shop owners", EC)]),
        R("mistral-7B-instruct", "On Tuesday, Lyon's council approved pedestrian zones on three central streets at a "
          "cost of €12 million. Mayor Grégory Doucet said the plan would cut noise and pollution by half.",
          [L("by half", SB)]),
    ]),
    dict(split="train", source="Recent News", article=(
        "A family bakery in Porto has won Portugal’s national prize for the best pastel de nata for the second "
        "year running. Owner Inês Carvalho, 58, said the secret was “patience and a very hot oven.” The judges "
        "tasted 120 entries in Lisbon on Saturday. The bakery, which opened in 1974, now plans to open a second "
        "shop near the river."), responses=[
        R("gpt-3.5-turbo-0613", "A family bakery in Porto won Portugal’s national pastel de nata prize for the "
          "second year in a row after judges tasted 120 entries in Lisbon. Owner Inês Carvalho credited “patience "
          "and a very hot oven” and plans a second shop near the river."),
        R("llama-2-13b-chat", "A Porto bakery opened in 1974 has won Portugal’s best pastel de nata prize for the "
          "third year running. Owner Inês Carvalho, 58, said the secret was “patience and a very hot oven.”",
          [L("for the third year running", EC)]),
    ]),
    dict(split="train", source="Recent News", article=(
        "Researchers at the University of Oslo have found that a common garden moss can absorb up to 20 times its "
        "weight in water. The team, led by Dr. Kari Nilsen, tested 14 moss species over two summers. They say the "
        "findings could help cities design green roofs that reduce flooding during heavy rain. The study was "
        "published in the journal Urban Ecology."), responses=[
        R("gpt-4-0613", "University of Oslo researchers led by Dr. Kari Nilsen found that a common garden moss can "
          "absorb up to 20 times its weight in water after testing 14 species over two summers. They suggest the "
          "moss could help green roofs reduce urban flooding."),
        R("llama-2-70b-chat", "A study by the University of Oslo shows that garden moss can hold up to 20 times its "
          "weight in water. The researchers tested 14 species over two summers and have already installed moss "
          "roofs on 300 buildings in Oslo.",
          [L("have already installed moss roofs on 300 buildings in Oslo", EB)]),
        R("mistral-7B-instruct", "Moss can absorb up to 20 times its weight in water, according to Dr. Kari "
          "Nilsen's team, who tested 14 species. The study, published in Nature, suggests moss roofs could curb "
          "flooding.", [L("published in Nature", EC)]),
    ]),
    dict(split="train", source="Recent News", article=(
        "São Paulo’s metro will run 24 hours a day on weekends starting in March, the state transport secretary "
        "announced on Monday. The trial covers Lines 1 and 2 and will last six months. Officials estimate that "
        "about 80,000 extra passengers will use the night service each weekend. Unions have asked for additional "
        "security staff at stations."), responses=[
        R("gpt-4-0613", "São Paulo’s metro will run around the clock on weekends from March on Lines 1 and 2 in a "
          "six-month trial, the state transport secretary said. About 80,000 extra weekend passengers are "
          "expected, and unions want more security staff."),
        R("llama-2-7b-chat", "Starting in March, São Paulo’s metro will operate 24 hours a day every day on Lines 1 "
          "and 2. Officials expect about 80,000 extra passengers each weekend, and unions have asked for more "
          "security staff.", [L("every day", EC)]),
        R("llama-2-13b-chat", "São Paulo will trial weekend 24-hour metro service on Lines 1 and 2 for six months "
          "from March. The unions have approved the plan.", [L("The unions have approved the plan.", SC)]),
    ]),
    dict(split="train", source="CNN/DM", article=(
        "A 19th-century shipwreck has been found off the coast of Cornwall by a team of amateur divers. The wooden "
        "vessel, thought to be the merchant ship Clara Jane, sank in a storm in 1852 with a cargo of tin. Historic "
        "England said the site would be protected while archaeologists study it. The divers first spotted the "
        "wreck in 2021 but kept its location secret."), responses=[
        R("gpt-3.5-turbo-0613", "Amateur divers found a 19th-century wreck off Cornwall, believed to be the merchant "
          "ship Clara Jane, which sank in a storm in 1852 carrying tin. Historic England will protect the site "
          "while archaeologists study it."),
        R("llama-2-7b-chat", "Amateur divers have identified the wreck as the Clara Jane off Cornwall. The ship sank "
          "in a storm in 1852 with a cargo of tin, and the divers first spotted it in 2019.",
          [L("identified the wreck as the Clara Jane", SC), L("in 2019", EC)]),
    ]),
    dict(split="train", source="Recent News", article=(
        "A new night market opened in Taipei’s Da’an district on Friday, with 150 food stalls selling dishes such "
        "as 牛肉麵 (beef noodle soup) and bubble tea. Organisers said more than 20,000 people visited on the first "
        "night. The market will open from Thursday to Sunday, from 6 p.m. to midnight."), responses=[
        R("gpt-4-0613", "Taipei’s Da’an district opened a new night market on Friday with 150 food stalls selling "
          "dishes like 牛肉麵 (beef noodle soup) and bubble tea 🧋. Over 20,000 people came on the opening night, "
          "and it will run Thursday to Sunday from 6 p.m. to midnight."),
        R("llama-2-13b-chat", "A new night market with 150 stalls opened in Taipei on Friday 🧋, drawing more than "
          "20,000 visitors. It will be open every night from 6 p.m. to 2 a.m.",
          [L("every night", EC), L("to 2 a.m.", EC)]),
        R("gpt-3.5-turbo-0613", "A new night market opened in Taipei’s Da’an district with 150 food stalls, and "
          "organisers said", quality="truncated"),
    ]),
    dict(split="train", source="CNN/DM", article=(
        "The electric carmaker Voltra reported a quarterly profit of $310 million, up from $120 million a year "
        "earlier. Sales rose 18% to 92,000 vehicles, helped by strong demand in Europe. The company warned that "
        "higher battery costs could squeeze margins later this year. Its shares rose 6% in early trading."),
        responses=[
        R("gpt-4-0613", "Voltra's quarterly profit rose to $310 million from $120 million a year earlier as sales "
          "grew 18% to 92,000 vehicles, driven by European demand. It warned battery costs could hurt margins, and "
          "its shares gained 6%."),
        R("mistral-7B-instruct", "Voltra made a profit of $310 million, up from $120 million, and sold 92,000 "
          "vehicles, an 18% increase. Demand was strongest in China. Shares rose 6%.",
          [L("Demand was strongest in China.", EC)]),
        # The one deliberately wrong offset of the sample: start and end are 2 characters too far right.
        R("llama-2-70b-chat", "Voltra's profit climbed to $310 million as sales rose 18% to 92,000 vehicles. The "
          "company expects margins to improve later this year.",
          [L("expects margins to improve later this year", EC, shift=2)]),
    ]),
    dict(split="test", source="CNN/DM", article=(
        "Heavy snow closed the Gotthard road tunnel in Switzerland for nine hours on Sunday, stranding hundreds of "
        "drivers. Police said 12 minor accidents were reported on approach roads but no one was seriously hurt. "
        "The tunnel reopened at 7 p.m. after crews cleared the entrances."), responses=[
        R("gpt-3.5-turbo-0613", "Heavy snow shut Switzerland's Gotthard road tunnel for nine hours on Sunday, "
          "stranding hundreds of drivers. Police reported 12 minor accidents with no serious injuries, and the "
          "tunnel reopened at 7 p.m."),
        R("llama-2-7b-chat", "The Gotthard tunnel was closed for nine hours on Sunday because of heavy snow. Police "
          "reported 12 accidents, two of them serious, and the tunnel reopened at 9 p.m.",
          [L("two of them serious", EC), L("at 9 p.m.", EC)]),
        R("mistral-7B-instruct", "Snow closed the Gotthard road tunnel for nine hours, stranding hundreds of "
          "drivers. It is the longest road tunnel in the Alps.",
          [L("It is the longest road tunnel in the Alps.", EB)]),
    ]),
    dict(split="test", source="Recent News", article=(
        "A study of 2,400 adults in Finland found that people who walked at least 7,000 steps a day had a 30% "
        "lower risk of heart disease over ten years. The researchers cautioned that the study shows an "
        "association, not proof that walking prevents heart disease."), responses=[
        R("gpt-4-0613", "A ten-year Finnish study of 2,400 adults linked walking at least 7,000 steps a day with a "
          "30% lower risk of heart disease, though researchers stressed this is an association rather than proof "
          "of cause."),
        R("llama-2-13b-chat", "A Finnish study of 2,400 adults proves that walking 7,000 steps a day prevents heart "
          "disease, cutting the risk by 30%.",
          [L("proves that walking 7,000 steps a day prevents heart disease", SC)]),
    ]),
    dict(split="test", source="Recent News", article=(
        "The Rijksmuseum in Amsterdam will lend Vermeer’s “The Milkmaid” to a museum in Tokyo for three months "
        "next year. It will be the painting’s first trip to Japan since 2007. Insurance for the loan is valued at "
        "€500 million."), responses=[
        R("gpt-3.5-turbo-0613", "The Rijksmuseum will lend Vermeer’s “The Milkmaid” to a Tokyo museum for three "
          "months next year, the painting’s first visit to Japan since 2007."),
        R("llama-2-70b-chat", "Amsterdam’s Rijksmuseum will send Vermeer’s “The Milkmaid” to Tokyo for six months, "
          "its first trip to Japan since 2007. The painting is insured for €500 million.",
          [L("for six months", EC)]),
    ]),
]

# --- Data2txt (Yelp-style business JSON) ---------------------------------------------------------------------

DATA2TXT = [
    dict(split="train", business={
        "name": "Café Lumière", "address": "12 Rue Saint-Paul", "city": "Montréal", "state": "QC",
        "categories": "Coffee & Tea, Bakeries, Cafes",
        "hours": {"Monday": "7:0-18:0", "Saturday": "8:0-17:0", "Sunday": "8:0-17:0"},
        "attributes": {"WiFi": "free", "OutdoorSeating": True, "RestaurantsPriceRange2": "1", "DogsAllowed": None},
        "business_stars": 4.5, "review_info": [
            {"review_stars": 5.0, "review_date": "2021-03-14 10:02:11",
             "review_text": "Best croissants in Old Montréal and the café au lait is perfect."},
            {"review_stars": 4.0, "review_date": "2021-05-02 15:40:27",
             "review_text": "Cozy spot with free WiFi, but it gets crowded on weekends."}]}, responses=[
        R("gpt-4-0613", "Café Lumière is a coffee shop and bakery at 12 Rue Saint-Paul in Montréal, QC, rated 4.5 "
          "stars. It offers free WiFi and outdoor seating, and reviewers praise its croissants and café au lait, "
          "though it can get crowded on weekends."),
        R("llama-2-7b-chat", "Café Lumière in Montréal is a cozy café rated 4.5 stars that welcomes dogs on its "
          "outdoor terrace. Reviewers love the croissants, and it is open daily from 7 a.m. to 10 p.m.",
          [L("welcomes dogs on its outdoor terrace", EB, due_to_null=True),
           L("open daily from 7 a.m. to 10 p.m.", EC)]),
    ]),
    dict(split="train", business={
        "name": "Golden Dragon", "address": "88 Mott St", "city": "New York", "state": "NY",
        "categories": "Chinese, Dim Sum, Restaurants", "hours": None,
        "attributes": {"RestaurantsReservations": True, "RestaurantsTakeOut": True, "Alcohol": "none",
                       "NoiseLevel": None},
        "business_stars": 3.5, "review_info": [
            {"review_stars": 4.0, "review_date": "2019-08-02 19:45:00",
             "review_text": "The 虾饺 (shrimp dumplings) are excellent and come out hot."},
            {"review_stars": 3.0, "review_date": "2019-11-20 13:12:40",
             "review_text": "Food is good but the service was slow at lunch."}]}, responses=[
        R("gpt-3.5-turbo-0613", "Golden Dragon is a Chinese dim sum restaurant at 88 Mott St in New York, NY, with "
          "a 3.5-star rating. It takes reservations and offers takeout. Reviewers praise the hot 虾饺 (shrimp "
          "dumplings) but mention slow service at lunch."),
        R("llama-2-13b-chat", "Golden Dragon at 88 Mott St serves dim sum and has a full bar. It is open seven days "
          "a week and is known as a quiet place for family dinners. Reviewers love the 虾饺 (shrimp dumplings).",
          [L("has a full bar", EC), L("It is open seven days a week", EB, due_to_null=True),
           L("known as a quiet place for family dinners", EB, due_to_null=True)]),
        R("mistral-7B-instruct", "Golden Dragon is a 3.5-star dim sum restaurant in New York that takes reservations "
          "and offers takeout; one reviewer found the service slow at lunch."),
    ]),
    dict(split="train", business={
        "name": "Sunset Yoga Studio", "address": "450 Ocean Ave", "city": "Santa Monica", "state": "CA",
        "categories": "Yoga, Fitness & Instruction", "hours": {"Monday": "6:0-21:0", "Saturday": "8:0-14:0"},
        "attributes": {"BusinessAcceptsCreditCards": True, "ByAppointmentOnly": False},
        "business_stars": 5.0, "review_info": [
            {"review_stars": 5.0, "review_date": "2022-01-09 08:30:00",
             "review_text": "Beautiful studio with ocean views 🌊 and friendly teachers."}]}, responses=[
        R("gpt-4-0613", "Sunset Yoga Studio at 450 Ocean Ave in Santa Monica, CA, is a 5-star yoga studio that "
          "accepts credit cards and does not require appointments. A reviewer describes ocean views 🌊 and friendly "
          "teachers."),
        R("llama-2-70b-chat", "Sunset Yoga Studio in Santa Monica is rated 5 stars and offers classes from 6 a.m. on "
          "Mondays. A reviewer mentions ocean views 🌊 and friendly teachers, and the first class is free for new "
          "students.", [L("the first class is free for new students", EB)]),
    ]),
    dict(split="train", business={
        "name": "Crêperie Sainte-Anne", "address": "710 Royal St", "city": "New Orleans", "state": "LA",
        "categories": "French, Creperies, Breakfast & Brunch",
        "hours": {"Tuesday": "8:0-15:0", "Wednesday": "8:0-15:0", "Sunday": "9:0-14:0"},
        "attributes": {"RestaurantsPriceRange2": "2", "OutdoorSeating": False, "GoodForKids": True},
        "business_stars": 4.0, "review_info": [
            {"review_stars": 5.0, "review_date": "2018-05-26 11:20:03",
             "review_text": "The ham and gruyère crêpe is to die for."},
            {"review_stars": 3.0, "review_date": "2018-07-01 09:48:27",
             "review_text": "Tasty, but we waited 40 minutes for a table."}]}, responses=[
        R("gpt-4-0613", "Crêperie Sainte-Anne is a French crêperie at 710 Royal St in New Orleans, LA, rated 4 stars "
          "and good for kids. Diners rave about the ham and gruyère crêpe, although one waited 40 minutes for a "
          "table."),
        R("llama-2-7b-chat", "Crêperie Sainte-Anne on Royal St in New Orleans serves crêpes in a charming courtyard "
          "with outdoor seating. The ham and gruyère crêpe is a favourite, and the wait is usually under 10 "
          "minutes.", [L("in a charming courtyard with outdoor seating", EC),
                       L("the wait is usually under 10 minutes", EC)]),
        R("mistral-7B-instruct", "Crêperie Sainte-Anne, at 710 Royal St, New Orleans, is a kid-friendly breakfast "
          "spot rated 4.0. It is open Tuesday and Wednesday from 8 a.m. to 3 p.m. and on Sunday from 9 a.m. to 2 "
          "p.m."),
    ]),
    dict(split="train", business={
        "name": "Lucky's Auto Repair", "address": "3021 W Indian School Rd", "city": "Phoenix", "state": "AZ",
        "categories": "Auto Repair, Automotive, Oil Change Stations",
        "hours": {"Monday": "7:30-17:30", "Friday": "7:30-17:30"},
        "attributes": {"BusinessAcceptsCreditCards": True}, "business_stars": 4.5, "review_info": [
            {"review_stars": 5.0, "review_date": "2020-02-11 16:05:00",
             "review_text": "Honest mechanics. They fixed my brakes for $180 when the dealer quoted $450."}]},
        responses=[
        R("gpt-3.5-turbo-0613", "Lucky's Auto Repair at 3021 W Indian School Rd in Phoenix, AZ, is a 4.5-star auto "
          "repair and oil change shop that accepts credit cards. A customer praised its honest mechanics, who fixed "
          "their brakes for $180 compared with a $450 dealer quote."),
        R("llama-2-13b-chat", "Lucky's Auto Repair in Phoenix has 4.5 stars. One customer said they fixed the brakes "
          "for $150 instead of the dealer's $450, and the shop offers a free shuttle service.",
          [L("$150", EC), L("the shop offers a free shuttle service", EB)]),
    ]),
    dict(split="train", business={
        "name": "Pho Saigon 99", "address": "11210 Bellaire Blvd", "city": "Houston", "state": "TX",
        "categories": "Vietnamese, Soup, Restaurants", "hours": {"Monday": "10:0-21:0", "Sunday": "10:0-21:0"},
        "attributes": {"RestaurantsDelivery": None, "RestaurantsPriceRange2": "1", "WiFi": "no"},
        "business_stars": 4.0, "review_info": [
            {"review_stars": 4.0, "review_date": "2017-12-03 20:14:09",
             "review_text": "Huge bowls of phở for under $10. The broth is rich and fragrant."},
            {"review_stars": 4.0, "review_date": "2018-02-17 12:33:51",
             "review_text": "Quick service, cash discount available."}]}, responses=[
        R("gpt-4-0613", "Pho Saigon 99 is an inexpensive Vietnamese restaurant in Houston, TX, rated 4 stars. "
          "Reviewers mention huge bowls of phở for under $10 with a rich, fragrant broth, quick service and a cash "
          "discount. It does not offer WiFi."),
        R("mistral-7B-instruct", "Pho Saigon 99 in Houston serves Vietnamese soups and is rated 4 stars. It offers "
          "free WiFi and delivers across the city. Reviewers praise the rich broth of its phở.",
          [L("It offers free WiFi", EC), L("delivers across the city", EB, due_to_null=True)]),
    ]),
    dict(split="train", business={
        "name": "Green Leaf Market", "address": "1500 SE Hawthorne Blvd", "city": "Portland", "state": "OR",
        "categories": "Grocery, Organic Stores", "hours": {"Monday": "8:0-20:0", "Sunday": "9:0-19:0"},
        "attributes": {"BikeParking": True, "BusinessParking": {"lot": False, "street": True, "garage": False}},
        "business_stars": 3.5, "review_info": [
            {"review_stars": 3.0, "review_date": "2016-09-30 17:42:10",
             "review_text": "Great organic produce but prices are high."}]}, responses=[
        R("llama-2-70b-chat", "Green Leaf Market is an organic grocery on SE Hawthorne Blvd in Portland with bike "
          "parking and street parking. A reviewer liked the organic produce but found the prices high."),
        R("gpt-3.5-turbo-0613", "Green Leaf Market in Portland, OR, is a 3.5-star organic grocery with a large "
          "parking lot. It has been family-owned since 1985, and reviewers say the produce is excellent but "
          "pricey.", [L("with a large parking lot", EC), L("It has been family-owned since 1985", EB)]),
    ]),
    dict(split="test", business={
        "name": "Blue Note Jazz Bar", "address": "220 Beale St", "city": "Memphis", "state": "TN",
        "categories": "Jazz & Blues, Bars, Nightlife",
        "hours": {"Thursday": "19:0-2:0", "Friday": "19:0-2:0", "Saturday": "19:0-2:0"},
        "attributes": {"Alcohol": "full_bar", "Smoking": None, "HappyHour": True}, "business_stars": 4.5,
        "review_info": [{"review_stars": 5.0, "review_date": "2023-04-15 23:10:00",
                         "review_text": "Live band every night, great cocktails, $5 cover."}]}, responses=[
        R("gpt-4-0613", "Blue Note Jazz Bar at 220 Beale St in Memphis, TN, is a 4.5-star jazz and blues bar with a "
          "full bar and happy hour, open Thursday to Saturday from 7 p.m. to 2 a.m. A reviewer highlights live "
          "bands, great cocktails and a $5 cover."),
        R("llama-2-7b-chat", "Blue Note Jazz Bar on Beale St in Memphis has live music, a full bar and a $10 cover. "
          "Smoking is allowed on the patio.",
          [L("a $10 cover", EC), L("Smoking is allowed on the patio.", EB, due_to_null=True)]),
        R("mistral-7B-instruct", "Blue Note Jazz Bar in Memphis is a 4.5-star nightlife spot with happy hour and a "
          "full bar. A reviewer enjoyed the live band and the cocktails."),
    ]),
    dict(split="test", business={
        "name": "Sakura Sushi 桜", "address": "55 Main St", "city": "Boston", "state": "MA",
        "categories": "Japanese, Sushi Bars", "hours": {"Monday": "11:30-22:0", "Friday": "11:30-23:0"},
        "attributes": {"RestaurantsReservations": False, "RestaurantsPriceRange2": "3"}, "business_stars": 4.0,
        "review_info": [{"review_stars": 4.0, "review_date": "2021-10-08 19:55:00",
                         "review_text": "Fresh fish, the omakase was worth the price 🍣."}]}, responses=[
        R("gpt-3.5-turbo-0613", "Sakura Sushi 桜 at 55 Main St in Boston, MA, is a pricier Japanese sushi bar rated 4 "
          "stars that does not take reservations. A reviewer praised the fresh fish and said the omakase was worth "
          "the price 🍣."),
        R("llama-2-13b-chat", "Sakura Sushi 桜 in Boston is a 4-star sushi bar 🍣 where reservations are recommended. "
          "The chef trained in Tokyo for 15 years.",
          [L("reservations are recommended", EC), L("The chef trained in Tokyo for 15 years.", EB)]),
    ]),
    dict(split="test", business={
        "name": "Maple Leaf Diner", "address": "9 Queen St", "city": "Burlington", "state": "VT",
        "categories": "Diners, Breakfast & Brunch", "hours": {"Saturday": "7:0-13:0", "Sunday": "7:0-13:0"},
        "attributes": {"GoodForKids": True, "RestaurantsTakeOut": True}, "business_stars": 4.0,
        "review_info": [{"review_stars": 4.0, "review_date": "2015-06-21 09:15:00",
                         "review_text": "Pancakes with real Vermont maple syrup. Friendly staff."}]}, responses=[
        R("gpt-4-0613", "Maple Leaf Diner at 9 Queen St in Burlington, VT, is a 4-star, kid-friendly breakfast diner "
          "with takeout, open weekends from 7 a.m. to 1 p.m. A reviewer enjoyed pancakes with real Vermont maple "
          "syrup and friendly staff."),
        R("mistral-7B-instruct", "Maple Leaf Diner in Burlington serves breakfast on weekends and offers takeout. "
          "Its pancakes come with real Vermont maple syrup, which is made from the sap of sugar maples.",
          [L("which is made from the sap of sugar maples", SB, implicit_true=True)]),
    ]),
]

# --- prompts (the RAGTruth generation templates) -------------------------------------------------------------


def qa_prompt(question: str, passages: str, n: int) -> str:
    return (f"Briefly answer the following question:\n{question}\nBear in mind that your response should be "
            f"strictly based on the following {n} passages:\n{passages}\nIn case the passages do not contain the "
            "necessary information to answer the question, please reply with: \"Unable to answer based on given "
            "passages.\"\noutput:")


def summary_prompt(article: str) -> str:
    words = max(50, round(len(article.split()) * 0.6))
    return f"Summarize the following news within {words} words:\n{article}\noutput:"


def data2txt_prompt(business: dict) -> str:
    return ("Instruction:\nWrite an objective overview about the following local business based only on the "
            "provided structured data in the JSON format. You should include details and cover the information "
            "mentioned in the customers' review. The overview should be 100 - 200 words. Don't make up "
            f"information. Structured data:\n{business!r}\nOverview:")


# --- assembly ------------------------------------------------------------------------------------------------


def locate(response: str, label: L) -> tuple[int, int]:
    """Character offsets of ``label.text`` in ``response`` (its n-th occurrence), checked to be unambiguous."""
    count = response.count(label.text)
    if count == 0:
        raise SystemExit(f"label {label.text!r} not in response {response!r}")
    if label.occurrence is None and count != 1:
        raise SystemExit(f"label {label.text!r} occurs {count} times; give occurrence=")
    start = -1
    for _ in range(label.occurrence or 1):
        start = response.find(label.text, start + 1)
    if start < 0:
        raise SystemExit(f"label {label.text!r} has no occurrence {label.occurrence}")
    return start, start + len(label.text)


def build() -> tuple[list[dict], list[dict]]:
    sources, responses = [], []
    response_id = 5000
    groups = (("QA", QA), ("Summary", SUMMARY), ("Data2txt", DATA2TXT))
    for task_index, (task, items) in enumerate(groups):
        for item_index, item in enumerate(items):
            source_id = str(1000 + 100 * task_index + item_index)
            if task == "QA":
                passages = "\n\n".join(f"passage {i}:{p}" for i, p in enumerate(item["passages"], 1))
                info: object = {"question": item["question"], "passages": passages}
                prompt, source = qa_prompt(item["question"], passages, len(item["passages"])), "MARCO"
            elif task == "Summary":
                info, prompt, source = item["article"], summary_prompt(item["article"]), item["source"]
            else:
                info, prompt, source = item["business"], data2txt_prompt(item["business"]), "Yelp"
            sources.append({"source_id": source_id, "task_type": task, "source": source, "source_info": info,
                            "prompt": prompt})
            for r in item["responses"]:
                labels = []
                for label in r.labels:
                    start, end = locate(r.response, label)
                    labels.append({"start": start + label.shift, "end": end + label.shift, "text": label.text,
                                   "meta": f"{META[label.type]}\nGenerative: {label.text}",
                                   "label_type": label.type, "implicit_true": label.implicit_true,
                                   "due_to_null": label.due_to_null})
                responses.append({"id": str(response_id), "source_id": source_id, "model": r.model,
                                  "temperature": TEMPERATURES[response_id % len(TEMPERATURES)], "labels": labels,
                                  "split": item["split"], "quality": r.quality, "response": r.response})
                response_id += 1
    return sources, responses


def readme(sources: list[dict], responses: list[dict]) -> str:
    task_of = {s["source_id"]: s["task_type"] for s in sources}
    labels = [label for r in responses for label in r["labels"]]
    by_task = Counter(s["task_type"] for s in sources)
    split_sources = Counter((s["task_type"], next(r["split"] for r in responses if r["source_id"] == s["source_id"]))
                            for s in sources)
    resp_by_task = Counter(task_of[r["source_id"]] for r in responses)
    clean = sum(not r["labels"] for r in responses)
    types = Counter(label["label_type"] for label in labels)
    quality = Counter(r["quality"] for r in responses)
    lines = [
        "# Embedded RAGTruth-format sample",
        "",
        "A small sample in the official RAGTruth file format (`response.jsonl` + `source_info.jsonl`, same fields",
        "as the RAGTruth release), shipped with the package so the commands and tests run with no download.",
        "**Every text is invented for this project** (no RAGTruth text is copied); the hallucinations imitate",
        "RAGTruth's (a conflicting number or date, an invented detail). It is for smoke tests and demos only:",
        "numbers measured on it say nothing about real detector quality.",
        "",
        "Generated by `python scripts/make_sample.py` (deterministic; `--check` verifies the checked-in files).",
        "Find it from Python with `ragtruth_spans.sample_data_dir()`; prepare it with",
        "`ragtruth-spans prepare --sample --out OUT`.",
        "",
        "## Contents",
        "",
        f"- {len(sources)} sources: " + ", ".join(
            f"{by_task[t]} {t} ({split_sources[(t, 'train')]} train, {split_sources[(t, 'test')]} test)"
            for t in ("QA", "Summary", "Data2txt")) + ".",
        f"- {len(responses)} responses (" + ", ".join(f"{resp_by_task[t]} {t}" for t in ("QA", "Summary", "Data2txt"))
        + f") from {len({r['model'] for r in responses})} RAGTruth models; {clean} have no label (clean).",
        f"- {len(labels)} labels: " + ", ".join(f"{types[t]} {t}" for t in
                                                ("Evident Conflict", "Subtle Conflict", "Evident Baseless Info",
                                                 "Subtle Baseless Info")) + "; "
        f"{sum(lab['implicit_true'] for lab in labels)} `implicit_true`, "
        f"{sum(lab['due_to_null'] for lab in labels)} `due_to_null`.",
        "- quality: " + ", ".join(f"{n} `{q}`" for q, n in sorted(quality.items())) + " (the default filter of",
        "  `prepare` keeps only `good`).",
        "- Unicode: accents (Zürich, São Paulo, crêpe), CJK (长城, 牛肉麵, 虾饺, 麻布台ヒルズ森JPタワー), emoji",
        "  (☕, 🧋, 🌊, 🍣; outside the BMP, so offsets are Python code points, not UTF-16 units), curly quotes.",
        *(f"- A repeated phrase: in response {r['id']} \"{lab['text']}\" occurs "
          f"{r['response'].count(lab['text'])} times and only the later occurrence (at {lab['start']}) is labelled."
          for r in responses for lab in r["labels"] if r["response"].find(lab["text"]) < lab["start"]
          and r["response"][lab["start"]:lab["end"]] == lab["text"]),
        "",
        "## The one deliberately wrong offset",
        "",
    ]
    for r in responses:
        for index, label in enumerate(r["labels"]):
            if r["response"][label["start"]:label["end"]] != label["text"]:
                good = r["response"].find(label["text"])
                lines += [
                    f"Response {r['id']}, label {index} (\"{label['text']}\") has `start={label['start']}, "
                    f"end={label['end']}`; the text actually sits at `[{good}, {good + len(label['text'])})`.",
                    "`prepare` finds it as the only occurrence within 50 characters, repairs it and reports it",
                    "(`labels.repaired == 1` in `stats.json`). Every other label satisfies",
                    "`response[start:end] == text`.",
                ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare with the checked-in files")
    args = parser.parse_args()
    sources, responses = build()
    files = {
        "source_info.jsonl": "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sources),
        "response.jsonl": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in responses),
        "README.md": readme(sources, responses),
    }
    if args.check:
        stale = [name for name, text in files.items()
                 if not (OUT / name).is_file() or (OUT / name).read_text(encoding="utf-8") != text]
        print("up to date" if not stale else f"stale: {', '.join(stale)}")
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (OUT / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(sources)} sources and {len(responses)} responses to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
