"""``import nli``: each NLI set read in its own format (tiny fixtures written here in the real layouts), labels
normalised, a bad line refused naming file, line and field, blank texts and duplicates counted, the test copy of a
repeated pair kept; and, when ``../shared/data/external/nli`` is present, the real sets read with their counts."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.data.nli import import_nli, parse_only, read_nli
from ragtruth_spans.data.nli_pairs import NliPair, detokenize, remove_duplicates
from ragtruth_spans.data.nli_sets import (
    faithdial_label,
    read_breaking_nli,
    read_cad,
    read_dialfact,
    read_esnli,
    read_faithdial,
    read_fever_rte,
    read_fever_symmetric,
    read_infotabs,
    read_q2,
    read_taxinli,
)

REAL_NLI = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "external" / "nli"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _esnli(root: Path, part: str = "dev", rows=(("A dog runs . ", "An animal moves . ", "entailment"),)) -> Path:
    for index, name in enumerate(("s1", "s2", "labels")):
        _write(root / "esnli" / "dataset" / "eSNLI" / f"{name}.{part}", "".join(r[index] + "\n" for r in rows))
    return root / "esnli"


def _tsv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    return _write(path, "".join("\t".join(r) + "\n" for r in [header, *rows]))


def _jsonl(path: Path, objects: list[dict]) -> Path:
    return _write(path, "".join(json.dumps(o) + "\n" for o in objects))


def _csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    import csv
    import io

    buffer = io.StringIO()
    csv.writer(buffer).writerows([header, *rows])
    return _write(path, buffer.getvalue())


def _cad(root: Path, rows: dict[str, list[list[str]]]) -> Path:
    for split, lines in rows.items():
        _tsv(root / "cad" / "NLI" / "all_combined" / f"{split}.tsv", ["sentence1", "sentence2", "gold_label"], lines)
    return root / "cad"


def test_detokenize_undoes_ptb_tokens():
    assert detokenize("Telemundo -LRB- -LSB- teleˈmundo -RSB- -RRB- is a network .") == \
        "Telemundo ([teleˈmundo]) is a network."
    assert detokenize("a children 's game , `` quoted '' and do n't") == 'a children\'s game, "quoted" and don\'t'


def test_esnli_dev_goes_to_train_test_stays_test_text_detokenised(tmp_path):
    _esnli(tmp_path, "dev", [("Two women 's hands . ", "Hands . ", "entailment"),
                             ("A man sleeps . ", " ", "neutral")])
    folder = _esnli(tmp_path, "test", [("A cat sits . ", "A dog sits . ", "contradiction")])
    pairs, report = read_esnli(folder)
    assert [(p.id, p.premise, p.hypothesis, p.label, p.split, p.binary) for p in pairs] == [
        ("snli-dev-000001", "Two women's hands.", "Hands.", "entailment", "train", False),
        ("snli-test-000001", "A cat sits.", "A dog sits.", "contradiction", "test", False)]
    assert report.input == 3 and report.skipped == {"blank premise or hypothesis": 1}
    assert set(report.details["files"]) == {f"dataset/eSNLI/{n}.{p}" for n in ("s1", "s2", "labels")
                                            for p in ("dev", "test")}


def test_esnli_unknown_label_and_misaligned_files_are_refused(tmp_path):
    folder = _esnli(tmp_path, "dev", [("A . ", "B . ", "entailment"), ("C . ", "D . ", "-")])
    _esnli(tmp_path, "test")
    with pytest.raises(InputError, match="unknown label '-'") as error:
        read_esnli(folder)
    assert (Path(error.value.path).name, error.value.line, error.value.field) == ("labels.dev", 2, "label")
    _write(folder / "dataset" / "eSNLI" / "s2.dev", "B . \n")
    with pytest.raises(InputError, match="1 lines where s1.dev has 2") as error:
        read_esnli(folder)
    assert Path(error.value.path).name == "s2.dev"


def test_taxinli_reads_label_not_annotated_label_and_genre_as_subset(tmp_path):
    header = ["prem", "hyp", "label", "annotated_label", "genre", "pairID"]
    _tsv(tmp_path / "taxinli" / "taxinli10k.tsv", header,
         [['He said "no".', "He refused.", "entailment", "-", "fiction", "1e"]])
    pairs, _ = read_taxinli(tmp_path / "taxinli")
    assert [(p.source, p.premise, p.label, p.split, p.subset) for p in pairs] == [
        ("multinli", 'He said "no".', "entailment", "train", "fiction")]
    _tsv(tmp_path / "taxinli" / "taxinli10k.tsv", header, [["A", "B", "entailment", "-", "fiction", "1e"],
                                                          ["A", "B\tC", "neutral", "-", "fiction", "2e"]])
    with pytest.raises(InputError, match="7 fields where the header has 6") as error:
        read_taxinli(tmp_path / "taxinli")
    assert error.value.line == 3


def test_cad_keeps_its_splits_and_refuses_an_unknown_label(tmp_path):
    folder = _cad(tmp_path, {"train": [["A man.", "A person.", "entailment"]], "dev": [["A b.", "C.", "neutral"]],
                             "test": [["A c.", "D.", "contradiction"]]})
    pairs, _ = read_cad(folder)
    assert [(p.id, p.split) for p in pairs] == [("cad-train-000002", "train"), ("cad-dev-000002", "dev"),
                                                ("cad-test-000002", "test")]
    _cad(tmp_path, {"dev": [["A b.", "C.", "Neutral?"]]})
    with pytest.raises(InputError, match="unknown label") as error:
        read_cad(folder)
    assert (Path(error.value.path).name, error.value.line, error.value.field) == ("dev.tsv", 2, "gold_label")


def _breaking(root: Path, lines: list[str]) -> Path:
    (root / "breaking_nli").mkdir(parents=True)
    with zipfile.ZipFile(root / "breaking_nli" / "breaking_nli_dataset.zip", "w") as archive:
        archive.writestr("data/dataset.jsonl", "\n".join(lines) + "\n")
    return root / "breaking_nli"


def test_breaking_nli_is_read_from_the_zip(tmp_path):
    row = {"sentence1": "A red car.", "sentence2": "A blue car.", "gold_label": "contradiction",
           "category": "colors", "pairID": 1, "annotator_labels": ["contradiction"]}
    pairs, report = read_breaking_nli(_breaking(tmp_path, [json.dumps(row)]))
    assert [(p.premise, p.hypothesis, p.label, p.subset, p.split) for p in pairs] == [
        ("A red car.", "A blue car.", "contradiction", "colors", "train")]
    assert list(report.details["files"]) == ["breaking_nli_dataset.zip"]


def test_breaking_nli_bad_line_names_the_zip_member_and_line(tmp_path):
    row = {"sentence1": "A.", "sentence2": "B.", "gold_label": "contradiction", "category": "colors"}
    folder = _breaking(tmp_path, [json.dumps(row), json.dumps({**row, "sentence2": 3})])
    with pytest.raises(InputError, match="must be a string") as error:
        read_breaking_nli(folder)
    assert error.value.path.endswith("breaking_nli_dataset.zip!data/dataset.jsonl")
    assert (error.value.line, error.value.field) == (2, "sentence2")


def test_fever_rte_is_binary_and_detokenised(tmp_path):
    base = tmp_path / "fever_rte" / "RTE-Fever" / "processed"
    _write(base / "dev.raw.input0", "Soul Food -LRB- 1997 -RRB- is a film .\nParis is in France .\n")
    _write(base / "dev.raw.input1", "Soul Food is a film.\nParis is in Spain.\n")
    _write(base / "dev.label", "entailment\nnot_entailment\n")
    pairs, report = read_fever_rte(tmp_path / "fever_rte")
    assert [(p.premise, p.label, p.binary, p.split) for p in pairs] == [
        ("Soul Food (1997) is a film.", "entailment", True, "train"),
        ("Paris is in France.", "not_entailment", True, "train")]
    assert report.repaired == {"input0: PTB tokenisation undone": 2}
    _write(base / "dev.label", "entailment\nneutral\n")
    with pytest.raises(InputError, match="unknown label 'neutral'") as error:
        read_fever_rte(tmp_path / "fever_rte")
    assert (error.value.line, error.value.field) == (2, "label")


def test_fever_symmetric_refutes_is_contradiction(tmp_path):
    base = tmp_path / "fever_symmetric" / "symmetric_v0.2"
    row = {"id": "1", "claim": "X is a film .", "evidence": "X is a book .", "gold_label": "REFUTES"}
    _jsonl(base / "fever_symmetric_dev.jsonl", [row])
    _jsonl(base / "fever_symmetric_test.jsonl", [{**row, "gold_label": "SUPPORTS", "claim": "X is a book ."}])
    pairs, _ = read_fever_symmetric(tmp_path / "fever_symmetric")
    assert [(p.hypothesis, p.label, p.split, p.binary) for p in pairs] == [
        ("X is a film.", "contradiction", "dev", True), ("X is a book.", "entailment", "test", True)]
    _jsonl(base / "fever_symmetric_test.jsonl", [{**row, "gold_label": "NOT ENOUGH INFO"}])
    with pytest.raises(InputError, match="unknown label") as error:
        read_fever_symmetric(tmp_path / "fever_symmetric")
    assert (Path(error.value.path).name, error.value.line, error.value.field) == (
        "fever_symmetric_test.jsonl", 1, "gold_label")


@pytest.mark.parametrize(("raw", "label"), [
    ("hallucination", "not_entailment"), ("Hallucination", "not_entailment"), ("hallucinated", "not_entailment"),
    ("Partial Hallucination", "not_entailment"), ("entailment,hallucination", "not_entailment"),
    ("entailment", "entailment"), ("Entailment", "entailment"), ("entailment,uncooperative", "entailment"),
    ("entailment. uncooperative", "entailment"), ("entailmentt,uncooperative", "entailment"),
    ("Uncooperative", "entailment"), ("generic", None), ("Generic", None), ("", None), ("  ", None),
])
def test_faithdial_labels_are_normalised(raw, label):
    assert faithdial_label(raw) == label


def test_faithdial_reads_generator_and_gold_files_and_counts_skips(tmp_path):
    audit = tmp_path / "faithdial_audit" / "data-audit"
    _csv(audit / "CTRL" / "ctrl_processed_wow.csv", ["knowledge", "history", "ctrl", "begin_label", "vrm_label"],
         [["Paris is the capital of France .", "hi", "paris is in france", "entailment", "edification"],
          ["Paris is big .", "hi", "i love it", "generic", "disclosure"]])
    _csv(audit / "gold" / "topical.csv", ["evidence", "history", "response", "BEGIN", "VRM"],
         [["Google was founded\nin 1998 .", "hi", "It is from 2001.", "Hallucination", "disclosure"],
          ["Google .", "hi", "ok", "", ""]])
    pairs, report = read_faithdial(tmp_path / "faithdial_audit")
    assert [(p.id, p.premise, p.label, p.subset, p.binary) for p in pairs] == [
        ("faithdial-ctrl-ctrl_processed_wow-000002", "Paris is the capital of France.", "entailment",
         "CTRL/ctrl_processed_wow", True),
        ("faithdial-gold-topical-000002", "Google was founded in 1998.", "not_entailment", "gold/topical", True)]
    assert report.input == 4 and report.skipped == {"generic response": 1, "no label": 1}


def test_faithdial_unknown_label_names_file_line_and_column(tmp_path):
    audit = tmp_path / "faithdial_audit" / "data-audit"
    _csv(audit / "gold" / "wow.csv", ["evidence", "history", "response", "BEGIN", "VRM"],
         [["A multi\nline text.", "hi", "ok", "Entailment", ""], ["B.", "hi", "ok", "maybe", ""]])
    with pytest.raises(InputError, match="unknown BEGIN label 'maybe'") as error:
        read_faithdial(tmp_path / "faithdial_audit")
    assert (Path(error.value.path).name, error.value.line, error.value.field) == ("wow.csv", 4, "BEGIN")


def test_q2_label_comes_from_the_file_name(tmp_path):
    base = tmp_path / "q2" / "third_party" / "data"
    header = ["", "episode_idx", "round", "topic", "message", "response", "knowledge", "gold"]
    for system in ("dodeca", "memnet"):
        for kind in ("consistent", "inconsistent"):
            _csv(base / f"{system}_{kind}.csv", header,
                 [["0", "0", "0", "t", "msg", f"{system} {kind} says", "Some knowledge.", "gold text"]])
    pairs, _ = read_q2(tmp_path / "q2")
    assert [(p.hypothesis, p.label, p.subset) for p in pairs] == [
        ("dodeca consistent says", "entailment", "dodeca"), ("dodeca inconsistent says", "not_entailment", "dodeca"),
        ("memnet consistent says", "entailment", "memnet"), ("memnet inconsistent says", "not_entailment", "memnet")]
    (base / "memnet_inconsistent.csv").unlink()
    with pytest.raises(InputError, match="file not found"):
        read_q2(tmp_path / "q2")


def _dialfact(root: Path, objects: list[dict]) -> Path:
    _jsonl(root / "dialfact" / "scripts" / "testsmall.jsonl", objects)
    return root / "dialfact"


def test_dialfact_joins_the_evidence_texts(tmp_path):
    evidence = [["Elvis", "https://x", "Elvis was born in 1935.", "0"],
                ["Elvis", "https://x", "He sang.", "1", "gt_evidence_added"],
                ["Elvis", "https://x", "Elvis was born in 1935.", "0"]]
    folder = _dialfact(tmp_path, [
        {"response": "Elvis was born in 1935.", "evidence_list": evidence, "response_label": "SUPPORTS"},
        {"response": "He was born in 1940.", "evidence_list": evidence[:1], "response_label": "REFUTES"},
        {"response": "He liked cats.", "evidence_list": evidence[1:2], "response_label": "NOT ENOUGH INFO"}])
    pairs, _ = read_dialfact(folder)
    assert [(p.premise, p.label, p.split, p.binary) for p in pairs] == [
        ("Elvis was born in 1935. He sang.", "entailment", "test", False),
        ("Elvis was born in 1935.", "contradiction", "test", False), ("He sang.", "neutral", "test", False)]


def test_dialfact_malformed_evidence_is_refused(tmp_path):
    folder = _dialfact(tmp_path, [{"response": "x", "evidence_list": [["Elvis", "https://x"]],
                                   "response_label": "SUPPORTS"}])
    with pytest.raises(InputError, match=r"must be a list \[title, url, text") as error:
        read_dialfact(folder)
    assert (error.value.line, error.value.field) == (1, "evidence_list[0]")


def _infotabs(root: Path, tables: dict[str, str], rows: dict[str, list[list[str]]]) -> Path:
    base = root / "infotabs" / "data"
    for table_id, text in tables.items():
        _write(base / "tables" / "json" / f"{table_id}.json", text)
    for name in ("train", "dev", "test_alpha1", "test_alpha2", "test_alpha3"):
        _tsv(base / "maindata" / f"infotabs_{name}.tsv", ["annotater_id", "table_id", "hypothesis", "label"],
             rows.get(name, []))
    return root / "infotabs"


def test_infotabs_tables_become_json_records_and_alphas_are_test(tmp_path):
    folder = _infotabs(tmp_path, {"T0": '{"title": ["In Rainbows"], "Genre": ["art rock", "art pop"], '
                                        '"Years active": ["2004"], "Years active": ["2006"]}'},
                       {"train": [["GW0", "T0", "In Rainbows is an album.", "E"]],
                        "test_alpha2": [["GW1", "T0", "It is jazz.", "C"]]})
    pairs, report = read_infotabs(folder)
    assert pairs[0].premise == '{"title": "In Rainbows", "Genre": ["art rock", "art pop"], ' \
                               '"Years active": ["2004", "2006"]}'
    assert [(p.id, p.label, p.split, p.subset) for p in pairs] == [
        ("infotabs-train-000002", "entailment", "train", None),
        ("infotabs-test-alpha2-000002", "contradiction", "test", "alpha2")]
    assert report.repaired == {"infobox key given twice (value lists merged)": 1} and report.details["tables"] == 1


def test_infotabs_missing_table_names_the_tsv_line(tmp_path):
    folder = _infotabs(tmp_path, {"T0": '{"title": ["A"]}'}, {"dev": [["GW0", "T0", "A.", "E"],
                                                                    ["GW0", "T9", "B.", "N"]]})
    with pytest.raises(InputError, match="no table data/tables/json/T9.json") as error:
        read_infotabs(folder)
    assert (Path(error.value.path).name, error.value.line, error.value.field) == (
        "infotabs_dev.tsv", 3, "table_id")


def _pair(pid: str, source: str, split: str, label: str, premise: str = "A man sleeps.",
          hypothesis: str = "A person rests.") -> NliPair:
    return NliPair(pid, premise, hypothesis, label, source, split, False)


def test_duplicates_test_beats_train_conflicts_dropped_first_copy_kept():
    pairs = [_pair("a", "snli", "train", "entailment", "A  man sleeps."),   # the same pair as test's, in train
             _pair("b", "cad", "test", "entailment", "a man SLEEPS."),
             _pair("c", "snli", "test", "entailment"),                      # same split, same label: first kept
             _pair("d", "cad", "dev", "neutral", hypothesis="Other."),
             _pair("e", "snli", "dev", "contradiction", hypothesis="Other."),  # two labels in dev: both dropped
             _pair("f", "snli", "train", "neutral", hypothesis="Unique.")]
    kept, counts = remove_duplicates(pairs)
    assert [p.id for p in kept] == ["b", "f"]
    assert counts == {"snli": {"repeats a test pair (the test copy kept)": 1,
                               "repeats a pair of the same split and label (the first kept)": 1,
                               "two labels for one pair in dev (all copies dropped)": 1},
                      "cad": {"two labels for one pair in dev (all copies dropped)": 1}}


def test_cad_copies_of_snli_pairs_stay_in_cad_and_counts_add_up(tmp_path):
    _esnli(tmp_path, "dev", [("A dog runs . ", "An animal moves . ", "entailment")])
    _esnli(tmp_path, "test", [("A cat sits . ", "A cat rests . ", "entailment"),
                              ("A cat sits . ", "A dog sits . ", "contradiction")])
    _cad(tmp_path, {"train": [["A bird flies.", "It moves.", "entailment"]],
                    "dev": [["A dog runs.", "An animal moves.", "entailment"]],
                    "test": [["A cat sits.", "A cat rests.", "entailment"]]})
    pairs, stats = read_nli(tmp_path, ["snli", "cad"])
    assert [p.id for p in pairs] == ["cad-train-000002", "cad-dev-000002", "cad-test-000002", "snli-test-000002"]
    assert stats["by_set"]["snli"]["duplicates"] == {
        "repeats a dev pair (the dev copy kept)": 1, "repeats a pair of the same split and label (the first kept)": 1}
    assert stats["counts"]["cad"] == {"train": {"entailment": 1}, "dev": {"entailment": 1},
                                      "test": {"entailment": 1}}
    assert (stats["input"], stats["written"], stats["duplicates"], stats["skipped"]) == (6, 4, 2, 0)
    assert stats["dev_test_premises_in_train"] == {}


def test_only_picks_sets_and_a_missing_folder_is_refused(tmp_path):
    assert parse_only("cad, snli") == ["cad", "snli"]
    with pytest.raises(InputError, match="unknown set 'sqad'"):
        parse_only("snli,sqad")
    _cad(tmp_path, {"train": [["A.", "B.", "neutral"]], "dev": [], "test": []})
    assert read_nli(tmp_path, ["cad"])[1]["sets"] == ["cad"]
    with pytest.raises(InputError, match="no folder for the set 'snli'") as error:
        read_nli(tmp_path, ["cad", "snli"])
    assert error.value.field == "--nli-dir"


def test_import_writes_the_pair_format(tmp_path):
    _cad(tmp_path / "nli", {"train": [["A.", "B.", "neutral"]], "dev": [["C.", "D.", "entailment"]],
                            "test": [["E.", "F.", "contradiction"]]})
    stats = import_nli(tmp_path / "nli", tmp_path / "out", ["cad"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["dev.jsonl", "stats.json", "test.jsonl",
                                                                    "train.jsonl"]
    line = json.loads((tmp_path / "out" / "test.jsonl").read_text(encoding="utf-8"))
    assert line == {"id": "cad-test-000002", "premise": "E.", "hypothesis": "F.", "label": "contradiction",
                    "source": "cad", "split": "test", "binary": False}
    written = json.loads((tmp_path / "out" / "stats.json").read_text(encoding="utf-8"))
    assert written["out_dir"] == str(tmp_path / "out") == stats["out_dir"]
    assert len(written["by_set"]["cad"]["files"]["NLI/all_combined/test.tsv"]) == 64  # a SHA-256


@pytest.mark.skipif(not REAL_NLI.is_dir(), reason="../shared/data/external/nli is not present")
def test_the_real_sets_read_with_the_readmes_counts():
    pairs, stats = read_nli(REAL_NLI)
    read = {name: entry["input"] for name, entry in stats["by_set"].items()}
    assert read == {"cad": 11330, "snli": 9842 + 9824, "multinli": 10071, "breaking_nli": 8193,
                    "fever_symmetric": 708 + 712, "fever_rte": 13332, "faithdial": 3196, "q2": 600, "dialfact": 300,
                    "infotabs": 16538 + 4 * 1800}
    assert stats["by_set"]["faithdial"]["skipped"]["no label"] in range(780, 800)
    snli_dup = sum(stats["by_set"]["snli"]["duplicates"].values())
    assert 600 <= snli_dup <= 640  # CAD repeats about 620 of e-SNLI's pairs
    assert stats["counts"]["dialfact"]["test"] == {"entailment": 99, "neutral": 98, "contradiction": 102}
    assert stats["by_set"]["infotabs"]["tables"] <= 2719
    assert stats["input"] == stats["written"] + stats["skipped"] + stats["duplicates"]
    assert {p.split for p in pairs if p.source in ("dialfact",)} == {"test"}
    assert len({p.id for p in pairs}) == len(pairs)
