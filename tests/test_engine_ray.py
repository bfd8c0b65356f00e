"""``--engine ray`` against ``--engine local`` on one local Ray cluster (marker ``ray``).

The acceptance data of the leakage checks: conversations that share a
400-word system prompt, planted near duplicates (one word of the user turn
changed) and exact copies (case and spacing), a templated family of 150
near-identical tickets (a bucket larger than the pairwise limit, so the
pivot rounds run), an id and a conversation in two splits, three splits.
Both engines must write the same bytes, but for the field naming the engine.
JSONL splits are read in blocks of a few kilobytes, so every split has
several blocks and the row numbers cross block edges.

``pytest -m "not ray"`` skips these in the edit-test loop.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_line_error

from evalkit import audit, split
from evalkit.errors import EngineFailure
from evalkit.leakage.distributed.session import RayOptions

# One worker runs them all under `pytest -n` (make test: --dist loadgroup): one cluster.
pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]
ray = pytest.importorskip("ray")

SYSTEM = " ".join(f"policy{i}" for i in range(400))
OPTIONS = RayOptions(partitions=3, block_bytes=150_000, bands_per_round=7)


def make_items(seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(3000)]
    categories = ["billing", "shipping", "account", "returns"]
    items: list[dict[str, Any]] = []

    def add(user: str, group: str) -> None:
        # The answer follows the ticket, so a copied ticket is a copied conversation.
        answer = json.dumps({"category": categories[len(user.split()) % len(categories)]})
        items.append(
            {
                "id": f"i{len(items):04d}",
                "group": group,
                "category": rng.choice(categories),
                "user": user,
                "answer": answer,
            }
        )

    bases = [" ".join(rng.choices(vocabulary, k=rng.randint(30, 50))) for _ in range(300)]
    for number, text in enumerate(bases):
        add(text, f"g{number // 2:03d}")
    for number, text in enumerate(bases[:40]):  # near: one word changed
        words = text.split()
        words[rng.randrange(len(words))] = f"changed{number}"
        add(" ".join(words), f"near{number:02d}")
    for number, text in enumerate(bases[40:70]):  # exact: case and spacing
        add("  ".join(w.upper() if rng.random() < 0.5 else w for w in text.split()), f"ex{number}")
    template = " ".join(rng.choices(vocabulary, k=45)).split()
    for number in range(150):  # a templated family: one large bucket
        words = list(template)
        words[rng.randrange(len(words))] = f"slot{number}"
        add(" ".join(words), f"tpl{number:03d}")
    add("", "empty")  # compared as empty text: never anyone's duplicate
    rng.shuffle(items)
    return items


def record(item: dict[str, Any]) -> dict[str, Any]:
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": item["user"]},
        {"role": "assistant", "content": item["answer"]},
    ]
    if not item["user"]:
        messages = messages[:1]  # the system prompt alone: compared as empty text
    return {k: item[k] for k in ("id", "group", "category")} | {"messages": messages}


def write(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record(i)) + "\n" for i in items), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def splits(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("splits")
    items = make_items()
    thirds = [items[: len(items) // 2], items[len(items) // 2 : 3 * len(items) // 4]]
    thirds.append(items[3 * len(items) // 4 :])
    thirds[2].append(dict(thirds[0][0]))  # the same item again: an id in two splits
    return [write(folder / f"{name}.jsonl", part) for name, part in zip(
        ("train", "val", "test"), thirds, strict=True)]  # fmt: skip


def without_engine(text: str) -> str:
    """The output as the local engine would name itself (the one field that may differ)."""
    assert text.count('"engine"') == 1
    return text.replace('"engine": "ray"', '"engine": "local"').replace(
        '"engine":"ray"', '"engine":"local"'
    )


AUDIT = {"id_column": "id", "text": "messages", "group": ["group"], "stratify": "category"}


def test_audit_reports_the_same_bytes(ray_cluster: None, splits: list[Path]) -> None:
    local = audit(splits, **AUDIT)
    distributed = audit(splits, **AUDIT, engine="ray", ray=OPTIONS)
    assert distributed.options.engine == "ray"
    local_json = local.model_dump_json(indent=2)
    assert without_engine(distributed.model_dump_json(indent=2)) == local_json
    # the data exercises what it should
    assert all(split.near_share and split.openings for split in local.within.values())
    assert local.within["train"].clusters[0].size > 64  # the templated family
    counts = local.counts
    assert counts.near_duplicates > 30 and counts.exact_duplicates > 10
    assert counts.group_leaks and counts.id_overlaps == 1
    assert sum(summary.empty_texts for summary in local.splits.values()) == 1


@pytest.mark.parametrize(
    ("near_dup", "within"), [(None, False), (0.5, False), (0.8, True), (None, True)]
)
def test_other_thresholds_and_the_pairs_within_splits(
    ray_cluster: None, splits: list[Path], near_dup: float | None, within: bool
) -> None:
    options = {"near_dup": near_dup, "seed": 4, "within": within, "opening_words": 3}
    local = audit(splits, **AUDIT, **options)
    distributed = audit(splits, **AUDIT, **options, engine="ray", ray=OPTIONS)
    assert without_engine(distributed.model_dump_json()) == local.model_dump_json()
    if within and near_dup:
        assert local.within_near_duplicates and local.within_exact_duplicates


def test_split_writes_the_same_files(ray_cluster: None, splits: list[Path], tmp_path: Path) -> None:
    data = tmp_path / "all.jsonl"
    lines = b"".join(path.read_bytes() for path in splits).splitlines(keepends=True)
    data.write_bytes(b"".join(lines[:-1]))  # without the repeated item: ids are unique
    arguments: dict[str, Any] = {
        "group": ["group"], "id_column": "id", "text": "messages", "stratify": "category",
        "near_dup": 0.8, "ratios": [0.7, 0.15, 0.15], "seed": 3,
    }  # fmt: skip
    for engine, out in (("local", tmp_path / "local"), ("ray", tmp_path / "ray")):
        options = OPTIONS if engine == "ray" else None
        result = split(data, **arguments, engine=engine, ray=options)  # type: ignore[arg-type]
        result.write(out, fmt="jsonl")
    assert result.record.merging is not None and result.record.merging.merged_groups > 30
    names = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "ray").iterdir())
    for name in names:
        local_bytes = (tmp_path / "local" / name).read_bytes()
        ray_bytes = (tmp_path / "ray" / name).read_bytes()
        if name == "manifest.json":
            ray_bytes = without_engine(ray_bytes.decode()).encode()
        assert ray_bytes == local_bytes, name


def test_split_cli_on_ray_writes_the_local_split(
    ray_cluster: None, splits: list[Path], tmp_path: Path, run_cli
) -> None:
    args = [splits[1], "--group", "group", "--id", "id", "--text", "messages", "--near-dup",
            "0.8", "--ratios", "0.5,0.5", "--names", "a,b", "--format", "jsonl",
            "--quiet"]  # fmt: skip
    assert run_cli("split", *args, "--out", tmp_path / "local").exit_code == 0
    distributed = run_cli("split", *args, "--out", tmp_path / "ray", "--engine", "ray")
    assert distributed.exit_code == 0, distributed.stderr
    for name in ("a.jsonl", "b.jsonl", "assignments.parquet"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    manifest = without_engine((tmp_path / "ray" / "manifest.json").read_text())
    assert manifest == (tmp_path / "local" / "manifest.json").read_text()
    # --engine ray is the duplicate search's engine: without --near-dup there is none
    result = run_cli("split", splits[1], "--group", "group", "--id", "id", "--text", "messages",
                     "--sizes", "10", "--out", tmp_path / "x", "--engine", "ray")  # fmt: skip
    assert_one_line_error(result, "--engine ray runs the --near-dup search on Ray")


def test_a_hugging_face_dataset_dict_folder(
    ray_cluster: None, splits: list[Path], tmp_path: Path
) -> None:
    datasets = pytest.importorskip("datasets")
    parts = {
        path.stem: datasets.Dataset.from_list(
            [json.loads(line) for line in path.read_text().splitlines()]
        )
        for path in splits
    }
    folder = tmp_path / "dataset"
    datasets.DatasetDict(parts).save_to_disk(str(folder))
    local = audit([folder], **AUDIT)
    distributed = audit([folder], **AUDIT, engine="ray", ray=OPTIONS)
    assert without_engine(distributed.model_dump_json()) == local.model_dump_json()
    assert local.counts.near_duplicates > 30


def test_cli_gives_the_same_exit_code_and_json(
    ray_cluster: None, splits: list[Path], tmp_path: Path, run_cli
) -> None:
    args = [*splits, "--id", "id", "--text", "messages", "--group", "group", "--quiet"]
    local = run_cli("audit", *args, "--json", tmp_path / "local.json")
    distributed = run_cli("audit", *args, "--json", tmp_path / "ray.json", "--engine", "ray")
    assert (local.exit_code, distributed.exit_code) == (1, 1), distributed.stderr
    ray_json = without_engine((tmp_path / "ray.json").read_text())
    assert ray_json == (tmp_path / "local.json").read_text()


def test_bad_input_in_a_block_fails_as_local(
    ray_cluster: None, splits: list[Path], tmp_path: Path, run_cli
) -> None:
    lines = splits[0].read_bytes().splitlines(keepends=True)
    broken = tmp_path / "train.jsonl"
    broken.write_bytes(b"".join([*lines[:50], b'{"id": "x", "messages": [\n', *lines[50:]]))
    args = [broken, splits[1], "--id", "id", "--text", "messages"]
    local = run_cli("audit", *args)
    distributed = run_cli("audit", *args, "--engine", "ray")
    assert_one_line_error(distributed, f"{broken}:51")
    assert distributed.stderr == local.stderr


def test_a_lost_worker_is_retried_and_a_failed_stage_is_named(
    ray_cluster: None, tmp_path: Path
) -> None:
    from evalkit.leakage.distributed.session import RaySession, ray_session
    from evalkit.leakage.progress import Progress

    def die_once(marker: str) -> str:  # nested: shipped by value to the workers
        import os

        if not os.path.exists(marker):
            Path(marker).write_text("x")
            os._exit(1)  # the worker process dies: Ray retries the task elsewhere
        return "second try"

    def fail() -> None:
        raise RuntimeError("out of luck")

    session: RaySession
    with ray_session(RayOptions(), Progress(False)) as session:
        marker = tmp_path / "died-once"
        dies_once = session.remote(die_once)
        assert session.run("a stage", [dies_once.remote(str(marker))]) == ["second try"]
        fails = session.remote(fail)
        with pytest.raises(EngineFailure, match="stage 'checking candidate pairs'"):
            session.run("checking candidate pairs", [fails.remote()])
    assert ray.is_initialized()  # the session's cluster was not this run's to stop


def test_ray_address_that_nobody_answers_is_one_line_at_once() -> None:
    from evalkit.errors import UsageError
    from evalkit.leakage.distributed.cluster import Address, check_address

    with pytest.raises(UsageError, match=r"Ray address 127.0.0.1:9: nothing answers there"):
        check_address(Address("127.0.0.1:9"))  # Ray itself would retry for minutes


def test_ray_address_needs_the_ray_engine(run_cli, splits: list[Path]) -> None:
    result = run_cli("audit", *splits, "--id", "id", "--text", "messages",
                     "--ray-address", "127.0.0.1:9")  # fmt: skip
    assert result.exit_code == 2 and "--ray-address needs --engine ray" in result.stderr


TOOLS_DATA = Path(__file__).parent.parent / "examples" / "tickets" / "tickets_tools.jsonl"


def _tool_copy(row: dict[str, Any], number: int, change: str) -> dict[str, Any]:
    """A copy of a function-calling ticket under new ids; ``change`` says what differs."""
    copy = json.loads(json.dumps(row))
    copy["ticket_id"], copy["conversation_id"] = f"X{number:04d}", f"XC{number:04d}"
    calls = [call for m in copy["messages"] for call in m.get("tool_calls") or []]
    if change == "name":  # the same text, another function called: a near duplicate
        calls[0]["function"]["name"] = "track_parcel"
    elif change == "arguments":
        calls[0]["function"]["arguments"] = json.dumps({"order_id": f"ORD-{number:06d}"})
    return copy


@pytest.fixture(scope="module")
def tool_splits(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The function-calling tickets in three splits, with copies that differ in tool calls.

    train is nested JSONL (read in blocks); val holds the messages and tools as
    JSON text in JSONL (blocks too); test is a CSV of JSON text. Copies across
    splits and inside train differ in nothing, a called function's name, or a
    call's arguments.
    """
    import polars as pl

    folder = tmp_path_factory.mktemp("tools")
    rows = [json.loads(line) for line in TOOLS_DATA.read_text(encoding="utf-8").splitlines()]
    train, val, test = rows[:360], rows[360:440], rows[440:]
    changes = ("none", "name", "arguments")
    for number in range(30):
        target = (val, test, train)[number % 3]
        target.append(_tool_copy(train[number], number, changes[number // 3 % 3]))
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    as_text = [r | {"messages": json.dumps(r["messages"]), "tools": json.dumps(r["tools"])}
               for r in val]  # fmt: skip
    (folder / "val.jsonl").write_text("".join(json.dumps(r) + "\n" for r in as_text))
    pl.DataFrame(
        [r | {"messages": json.dumps(r["messages"]), "tools": json.dumps(r["tools"])} for r in test]
    ).write_csv(folder / "test.csv")
    return [folder / "train.jsonl", folder / "val.jsonl", folder / "test.csv"]


TOOL_AUDIT = {"id_column": "ticket_id", "text": "messages", "group": ["conversation_id"]}


@pytest.mark.parametrize(("near_dup", "within"), [(0.8, True), (None, False)])
def test_tool_calling_conversations_give_the_same_report(
    ray_cluster: None, tool_splits: list[Path], near_dup: float | None, within: bool
) -> None:
    options = {"near_dup": near_dup, "within": within, "stratify": "category"}
    local = audit(tool_splits, **TOOL_AUDIT, **options)
    distributed = audit(tool_splits, **TOOL_AUDIT, **options, engine="ray", ray=OPTIONS)
    assert without_engine(distributed.model_dump_json(indent=2)) == local.model_dump_json(indent=2)
    summaries = local.splits
    assert [summaries[s].json_text for s in ("train", "val", "test")] == [False, True, True]
    assert all(summary.tool_calls > 100 for summary in summaries.values())
    assert local.options.tools is None  # the column named tools, found by name
    if near_dup is not None:
        near = {(p.a, p.b) for p in local.near_duplicates}
        # a copy whose call names another function is a near duplicate, not an exact one
        assert local.counts.exact_duplicates >= 6 and local.counts.near_duplicates > 6
        assert any("X0003" in pair for pair in near), near  # a function renamed
        assert local.within_exact_duplicates and local.within["train"].exact_share > 0


def test_tool_calling_split_writes_the_same_files(
    ray_cluster: None, tool_splits: list[Path], tmp_path: Path
) -> None:
    arguments: dict[str, Any] = {
        "group": ["conversation_id"], "id_column": "ticket_id", "text": "messages",
        "stratify": "category", "near_dup": 0.8, "ratios": [0.7, 0.15, 0.15], "seed": 7,
    }  # fmt: skip
    for engine in ("local", "ray"):
        options = OPTIONS if engine == "ray" else None
        result = split(tool_splits[0], **arguments, engine=engine, ray=options)  # type: ignore[arg-type]
        result.write(tmp_path / engine, fmt="parquet")
    assert result.record.merging is not None and result.record.merging.merged_groups >= 10
    assert result.record.within is not None
    for name in sorted(p.name for p in (tmp_path / "local").iterdir()):
        local_bytes = (tmp_path / "local" / name).read_bytes()
        ray_bytes = (tmp_path / "ray" / name).read_bytes()
        if name == "manifest.json":
            ray_bytes = without_engine(ray_bytes.decode()).encode()
        assert ray_bytes == local_bytes, name


def test_alpaca_columns_and_roles_on_plain_text(
    ray_cluster: None, splits: list[Path], tmp_path: Path, run_cli
) -> None:
    """Alpaca's three columns are compared alike; --roles on plain text fails alike."""
    paths = []
    for path in splits:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        alpaca = [
            {"id": r["id"], "group": r["group"], "instruction": "Triage this ticket.",
             "input": r["messages"][1]["content"] if len(r["messages"]) > 1 else "",
             "output": r["messages"][2]["content"] if len(r["messages"]) > 2 else ""}
            for r in rows
        ]  # fmt: skip
        paths.append(tmp_path / path.name)
        paths[-1].write_text("".join(json.dumps(r) + "\n" for r in alpaca))
    columns = ["instruction", "input", "output"]
    options: dict[str, Any] = {"id_column": "id", "group": ["group"], "near_dup": 0.8}
    local = audit(paths, text=columns, **options)
    distributed = audit(paths, text=columns, **options, engine="ray", ray=OPTIONS)
    assert without_engine(distributed.model_dump_json()) == local.model_dump_json()
    assert local.splits["train"].shape == "alpaca" and local.counts.near_duplicates > 30
    args = [*paths, "--id", "id", "--text", "output", "--roles", "user"]
    assert_one_line_error(run_cli("audit", *args, "--engine", "ray"), "holds plain text")
    assert run_cli("audit", *args, "--engine", "ray").stderr == run_cli("audit", *args).stderr


def test_a_local_cluster_refuses_a_client_without_its_token(
    ray_cluster: None, tmp_path: Path
) -> None:
    """A local cluster (evalkit's, or this session's) listens on every interface, so it must
    ask for the token Ray keeps for the user (Ray >= 2.59; the extra needs 2.60)."""
    import os
    import subprocess
    import sys

    if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        pytest.skip("RAY_AUTH_MODE=disabled: this machine's user turned Ray's tokens off")
    address = ray.get_runtime_context().gcs_address
    code = (
        "import sys\n"
        "from ray._raylet import GcsClient\n"
        "try:\n"
        "    GcsClient(address=sys.argv[1]).internal_kv_get(b'x', None, timeout=5)\n"
        "    print('answered')\n"
        "except Exception as error:\n"
        "    print('refused', type(error).__name__, error)\n"
    )

    def ask(env: dict[str, str]) -> str:
        command = [sys.executable, "-c", code, address]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60).stdout

    assert ask(dict(os.environ)) == "answered\n"  # this user, with the token
    stranger = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    stranger["HOME"] = str(tmp_path)  # another user: no ~/.ray/auth_token
    answer = ask(stranger)
    assert answer.startswith("refused AuthenticationError"), answer
    assert "InvalidAuthToken" in answer


def test_a_within_listing_cut_at_its_limit_is_the_same(ray_cluster: None) -> None:
    """More than the listing's limit of exact and of near pairs in one split: both engines
    list the same first pairs (Ray: per text partition and per band task, then merged)."""
    import polars as pl
    from test_leakage_within_bounds import planted

    frames = {
        name: pl.DataFrame({"id": [i for i, _ in items], "text": [t for _, t in items]})
        for name, items in planted().items()
    }
    local = audit(frames, id_column="id", text="text", within=True)
    distributed = audit(frames, id_column="id", text="text", within=True, engine="ray", ray=OPTIONS)
    assert local.within_truncated == {"exact": ["train"], "near": ["train"]}
    assert without_engine(distributed.model_dump_json()) == local.model_dump_json()
