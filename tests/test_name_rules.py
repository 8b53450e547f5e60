"""GPU name rules: the curated file, its import, curators' own rules in the admin, match_gpu input."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmarks_app.services.snapshot import catalog_snapshot, catalog_snapshot_refresh_if_changed
from catalog.matching import GpuMatcher
from catalog.matching.rules import NAME_RULES_PATH, NameRuleError, name_rules_from_toml
from catalog.models import GpuNameRule
from catalog.services.name_rules import name_rules_import
from tests.factories import GpuAliasFactory, GpuFactory, UserFactory
from tests.support import command_output

pytestmark = pytest.mark.django_db


def test_the_bundled_rules_file_is_valid_and_every_rule_has_a_reason_and_a_real_example():
    rules = name_rules_from_toml()
    assert len(rules) >= 40
    assert all(rule.reason and rule.example for rule in rules)
    memory_rules = [r for r in rules if r.kind == GpuNameRule.Kind.MEMORY_OPTION]
    assert memory_rules and all(r.source.startswith("https://") for r in memory_rules)


def test_import_writes_the_rules_once_and_keeps_a_curators_own(tmp_path):
    GpuFactory(name="Radeon Instinct MI250X", slug="radeon-instinct-mi250x", memory_gib=128)
    mine = GpuNameRule.objects.create(position=5, kind="strip", pattern=r"\bTurbo\b", reason="a shop's word")
    first = name_rules_import()
    assert first.created == len(name_rules_from_toml()) and first.deleted == 0
    # GPUs this small catalogue lacks are named, not dropped silently.
    assert any("radeon-instinct-mi250 " in p or "radeon-instinct-mi250," in p for p in first.problems)
    again = name_rules_import()
    assert (again.created, again.deleted, again.unchanged) == (0, 0, first.created)
    assert GpuNameRule.objects.filter(pk=mine.pk, origin=GpuNameRule.Origin.CURATOR).exists()
    mi250x = GpuNameRule.objects.get(kind="memory_option", gpus__slug="radeon-instinct-mi250x")
    assert mi250x.memory_gib == 64 and mi250x.origin == GpuNameRule.Origin.CURATED


def test_a_changed_file_replaces_the_curated_rules(tmp_path):
    name_rules_import()
    path = tmp_path / "name_rules.toml"
    path.write_text(
        '[[rule]]\nkind = "strip"\npattern = \'\\bTurbo\\b\'\nreason = "noise"\nexample = "H100 Turbo"\n',
        encoding="utf-8",
    )
    summary = name_rules_import(path=path)
    assert summary.created == 1 and summary.deleted == len(name_rules_from_toml())
    assert list(GpuNameRule.objects.values_list("pattern", flat=True)) == [r"\bTurbo\b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[rule]]\nkind = "strip"\npattern = "(unclosed"\n',
            "rule #1 (strip): pattern: not a valid regular expression",
        ),
        ('[[rule]]\nkind = "shout"\npattern = "x"\n', "kind: 'shout' is not one of"),
        ('[[rule]]\nkind = "refuse"\npattern = "x"\nvalue = "maybe"\n', "a refusal gives unmatched or ambiguous"),
        (
            '[[rule]]\nkind = "memory_option"\ngpus = ["b200"]\nmemory_gib = 192\n',
            "source: a memory size needs a source",
        ),
        ('[[rule]]\nkind = "strip"\npattern = "x"\ncolour = "red"\n', "unknown key(s) colour"),
        ("[[rule]\n", "not valid TOML"),
    ],
)
def test_a_malformed_rules_file_is_refused_naming_the_rule(tmp_path, text, message):
    path = tmp_path / "name_rules.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NameRuleError) as caught:
        name_rules_import(path=path)
    assert message in str(caught.value)
    assert not GpuNameRule.objects.exists()


def test_import_catalog_reports_a_bad_rules_file_without_a_traceback(tmp_path):
    for name in ("gpus.toml", "architectures.toml"):
        (tmp_path / name).write_text((NAME_RULES_PATH.parent / name).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "name_rules.toml").write_text('[[rule]]\nkind = "strip"\npattern = "("\n', encoding="utf-8")
    with pytest.raises(CommandError, match=r"curated data: name_rules.toml rule #1"):
        call_command("import_catalog", curated_dir=tmp_path, stdout=io.StringIO())


def test_rules_in_the_database_are_the_ones_in_force_and_the_snapshot_follows_them():
    h100 = GpuFactory(name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", family="H100", variant="SXM", memory_gib=80)
    GpuAliasFactory(gpu=h100, alias="H100")
    # No rows yet: the bundled file applies.
    assert GpuMatcher.load().match(name="NVIDIA H100 Turbo").status == "unmatched"
    snapshot = catalog_snapshot()
    name_rules_import()
    GpuNameRule.objects.create(position=5, kind="strip", pattern=r"\bTurbo\b", reason="a shop's word")
    assert GpuMatcher.load().match(name="NVIDIA H100 Turbo").slug == "h100-sxm5-80-gb"
    # The ingest's snapshot notices the new rule on its next miss.
    assert snapshot.match(name="NVIDIA H100 Turbo", memory_gib=None).status == "unmatched"
    assert catalog_snapshot_refresh_if_changed().match(name="NVIDIA H100 Turbo", memory_gib=None).matched


def test_a_curator_adds_a_rule_in_the_admin_and_a_broken_one_is_refused(client):
    client.force_login(UserFactory(username="curator", is_staff=True, is_superuser=True))
    url = "/admin/catalog/gpunamerule/add/"
    fields = {"position": "5", "kind": "strip", "value": "", "phrase": "", "reason": "noise", "origin": "curator"}
    broken = client.post(url, {**fields, "pattern": "(unclosed"})
    assert broken.status_code == 200 and "not a valid regular expression" in broken.content.decode()
    missing_gpus = client.post(url, {**fields, "kind": "memory_option", "pattern": "", "memory_gib": "64"})
    assert "a memory_option rule names the GPU(s) it applies to" in missing_gpus.content.decode()
    assert not GpuNameRule.objects.exists()
    saved = client.post(url, {**fields, "pattern": r"\bTurbo\b"})
    assert saved.status_code == 302
    assert GpuNameRule.objects.get().origin == GpuNameRule.Origin.CURATOR
    assert client.get("/admin/catalog/gpunamerule/").status_code == 200


def match_gpu(*args: str, stdin: str = "") -> str:
    return command_output("match_gpu", *args, stdin=stdin)


def test_match_gpu_reads_names_and_memory_and_names_bad_input():
    GpuFactory(name="L40S", slug="l40s", memory_gib=48)
    out = match_gpu(stdin="L40S\t46068\n\nL40S\t24576\n")
    assert '"status": "matched"' in out.splitlines()[0] and '"status": "conflict"' in out.splitlines()[1]
    assert '"slug": "l40s"' in match_gpu("L40S", "--memory-mib", "46068")
    with pytest.raises(CommandError, match="standard input line 2: memory 'lots' is not a number of MiB"):
        match_gpu(stdin="L40S\t46068\nL40S\tlots\n")
    with pytest.raises(CommandError, match="must be a positive number"):
        match_gpu(stdin="L40S\t-1\n")
    with pytest.raises(CommandError, match="--memory-mib must be a positive number"):
        match_gpu("L40S", "--memory-mib", "0")


def test_an_overlong_name_is_refused_without_reading_it():
    GpuFactory(name="RTX PRO 6000 Blackwell", slug="rtx-pro-6000-blackwell", memory_gib=96)
    result = GpuMatcher.load().match(name="RTX PRO 6000 " * 5000)
    assert result.status == "unmatched" and "65000 characters" in result.reason


def test_match_gpu_corpus_names_a_malformed_corpus(tmp_path):
    path = tmp_path / "corpus.tsv"
    path.write_text("name\tmemory_mib\texpected\tneeds_catalogue_entry\tsource\tnote\nL40S\tbig\tl40s\t\tx\t\n")
    with pytest.raises(CommandError, match="corpus.tsv line 2: memory_mib 'big' is not a number"):
        match_gpu("--corpus", str(path))
    path.write_text("name\texpected\nL40S\tl40s\n")
    with pytest.raises(CommandError, match="lacks column"):
        match_gpu("--corpus", str(path))
    with pytest.raises(CommandError, match="file not found"):
        match_gpu("--corpus", str(Path(tmp_path) / "absent.tsv"))
