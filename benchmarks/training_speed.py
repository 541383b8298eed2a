"""Training speed of the SB3 learners: env-steps/s while learning against a random policy's env-steps/s.

    python -m benchmarks.training_speed                             # UEC-v0 sac+dqn, OINC-v0 sac, ASET-v0 dqn
    python -m benchmarks.training_speed baseline=09c51b6            # + the same at that commit, in one run
    python -m benchmarks.training_speed baseline=09c51b6 quality=true seeds=[0,1] steps=10000
        # + full `train.py` runs at both commits: final evaluation reward and wall time on the same seeds
    python -m benchmarks.training_speed baseline=09c51b6 "cases=[uec-v0:sac]" label=same-network \
        'new_extra=["+algo.policy_kwargs.head=null","algo.policy_kwargs.net_arch=[128,128]","algo.update_ratio=null",\
        "algo.learning_rate=3e-4","algo.target_entropy_ratio=0.6"]'   # this code with UEC's old SAC settings
    python -m benchmarks.training_speed "cases=[uec-v0:sac,uec-v0:ppo_mask@64,oinc-v0:sac,oinc-v0:ppo_mask@64,\
        aset-v1:dqn,aset-v1:ppo_mask@64,corais-v1:ppo_mask,corais-v1:ppo_mask@64]"
        # the batched trainer (MaskablePPO on 64 native envs) against each env's one-env learner, in one run
    python -m benchmarks.training_speed -h                          # every key

Each measurement runs in a fresh process (``python -c``) whose working directory is this checkout or, for
``baseline=<commit>``, a temporary ``git worktree`` of that commit, so old and new code are measured by the
same script, alternately (``rounds``), under the same load. A measurement builds the learner exactly as
``train.py`` does (its ``prepare`` with ``env=<env> algo=<algo>`` and the ``extra`` overrides), learns
``warmup`` env steps (the warm-up fills the replay buffer), then times ``measure`` more env steps of
learning; in the same process it times a uniformly random feasible policy on the same env. The ratio
learner/random says how much of training is the learner. A case ``<env>:<algo>@<N>`` trains on ``N`` envs of
the env's native batched VectorEnv (``n_envs=N vec_env=native``; needs this checkout's train.py API, so not with
``baseline=`` of an older commit); its random policy steps the same batched env, and each such case is also
compared with the first plain ``<env>:<algo>`` case of its env (a ``... vs <case>`` row). On-policy learners are
timed over whole rollouts (at least ``rollouts``), and the rate counts the env steps actually learned. Rows go to
``outputs/benchmarks/performance.csv`` (``publish=true``: the checked-in ``results/benchmarks/performance.csv`` and
docs/performance.md).
Timings are machine-dependent: quote the ratios, measured in one run.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Runs in the measured tree (cwd); a plain case uses only API that exists at older commits too
#: (train.prepare/make_env); an ``@N`` case (``n_envs`` > 0) needs train.make_native_vec_env and build_sb3_model.
WORKER = r"""
import json, sys, time
import numpy as np, torch
from hydra import compose, initialize_config_dir
from edge_sched_gym import train
from agents.masking import infer_mask_dim
from agents.registry import resolve_policy_kwargs
from stable_baselines3.common.logger import configure

args = json.loads(sys.argv[1])
torch.set_num_threads(1)
with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
    cfg = compose("config", overrides=[f"env={args['env']}", f"algo={args['algo']}", *args["extra"]])
prep = train.prepare(cfg, args["extra"])
env = train.make_env(prep.env)
mask_dim = infer_mask_dim(env, prep.algo.get("mask", "auto"))
cls = prep.spec.load_target()
algo = dict(prep.algo)
n_envs = args["n_envs"]
model = None
samples = ""
if prep.spec.kind == "custom":  # the CoRaiS REINFORCE trainer's own update, on one core like the SB3 cases
    from agents.corais import trainer as corais
    from agents.corais.model import CoRaiSNet, ModelConfig
    tcfg = corais.TrainConfig.from_dict(algo)
    scenario, trng, samples = corais.training_scenario(prep.env), np.random.default_rng(0), tcfg.samples
    torch.manual_seed(0)
    net = CoRaiSNet(ModelConfig(**tcfg.model))
    optimiser = torch.optim.Adam(net.parameters(), lr=tcfg.lr)
    per_batch = tcfg.batch_size * tcfg.samples  # scored dispatches: each is one env step's decision and reward
    def learn_batches(count):
        for _ in range(count):
            instances = corais.make_batch(scenario, trng, tcfg.batch_size)
            corais.reinforce_step(net, optimiser, instances, tcfg, "cpu", tcfg.baseline == "greedy")
        return count * per_batch
    learn_batches(max(-(-args["warmup"] // per_batch), 10))
    start, cpu = time.perf_counter(), time.process_time()
    measured = learn_batches(max(-(-args["measure"] // per_batch), 30))
    learn_wall, learn_cpu = time.perf_counter() - start, time.process_time() - cpu
elif n_envs:  # env:algo@N: the native batched vector env, the model as train.py builds it
    train.fast_distributions() if train.is_maskable_ppo(cls) else None
    venv = train.make_native_vec_env(prep.env, n_envs, 0)
    model = train.build_sb3_model(cls, algo, venv, env, mask_dim, seed=0, device="cpu")
elif hasattr(train, "build_sb3_model"):  # one env, the model as train.py builds it (policy=auto, batch cap)
    train.fast_distributions() if train.is_maskable_ppo(cls) else None
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv
    model = train.build_sb3_model(cls, algo, DummyVecEnv([lambda: Monitor(env)]), env, mask_dim, seed=0, device="cpu")
else:  # older commits
    kwargs = {k: v for k, v in algo.items() if k not in ("name", "kind", "default_steps", "mask", "policy", "policy_kwargs")}
    if "mask_dim" in cls.__init__.__code__.co_varnames:
        kwargs["mask_dim"] = mask_dim
    try:
        policy_kwargs = resolve_policy_kwargs(algo.get("policy_kwargs") or {}, env)
    except TypeError:  # older commits: no env argument
        policy_kwargs = resolve_policy_kwargs(algo.get("policy_kwargs") or {})
    model = cls(algo["policy"], env, seed=0, device="cpu", verbose=0, policy_kwargs=policy_kwargs, **kwargs)
if model is not None:
    learn = train.learn_kwargs(model) if hasattr(train, "learn_kwargs") else {}
    model.set_logger(configure(None, []))
    rollout = getattr(model, "n_steps", 0) * model.n_envs if hasattr(model, "rollout_buffer") else 0
    warmup, measure = args["warmup"], args["measure"]
    if rollout:  # on-policy: whole rollouts (learn() always finishes one), at least args["rollouts"] of them timed
        warmup = -(-warmup // rollout) * rollout
        measure = max(-(-measure // rollout), args["rollouts"]) * rollout
    model.learn(warmup, **learn)
    done, start, cpu = model.num_timesteps, time.perf_counter(), time.process_time()
    model.learn(measure, reset_num_timesteps=False, **learn)
    learn_wall, learn_cpu = time.perf_counter() - start, time.process_time() - cpu
    measured = model.num_timesteps - done

rng = np.random.default_rng(0)
space = env.action_space
def random_action(info):
    mask = info.get("action_mask")
    if mask is None:
        return space.sample()
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim == 1 and space.shape == ():
        return int(rng.choice(np.flatnonzero(mask)))
    return space.sample(mask=tuple(m.astype(np.int8) for m in np.split(mask, np.cumsum(space.nvec)[:-1])))
steps, start = 0, time.perf_counter()
if n_envs:  # the same SB3 view of the batched env under a uniformly random feasible policy
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    masked = is_masking_supported(venv) and space.shape == ()
    venv.seed(0)
    venv.reset()
    while time.perf_counter() - start < args["random_seconds"]:
        if masked:
            actions = (rng.random((n_envs, space.n)) * get_action_masks(venv)).argmax(axis=1)
        elif space.shape == ():
            actions = rng.integers(0, space.n, n_envs)
        else:
            actions = rng.integers(0, space.nvec, (n_envs, len(space.nvec)))
        venv.step(actions)
        steps += n_envs
else:
    obs, info = env.reset(seed=0)
    while time.perf_counter() - start < args["random_seconds"]:
        obs, reward, terminated, truncated, info = env.step(random_action(info))
        steps += 1
        if terminated or truncated:
            obs, info = env.reset()
random_rate = steps / (time.perf_counter() - start)
print("RESULT " + json.dumps({"train_rate": measured / learn_wall, "train_cpu_rate": measured / learn_cpu,
                             "random_rate": random_rate, "learner": f"{cls.__module__}.{cls.__name__}",
                             "train_freq": str(getattr(model, "train_freq", "")),
                             "gradient_steps": getattr(model, "gradient_steps", ""),
                             "n_steps": getattr(model, "n_steps", ""), "batch_size": getattr(model, "batch_size", ""),
                             "n_epochs": getattr(model, "n_epochs", ""), "samples": samples,
                             "measured_steps": measured}))
"""

#: (env config, algo, extra overrides) measured by default: the learners each env's docs train.
DEFAULT_CASES: tuple[str, ...] = ("uec-v0:sac", "uec-v0:dqn", "oinc-v0:sac", "aset-v0:dqn")


@dataclass
class Options:
    cases: list[str] = field(default_factory=lambda: list(DEFAULT_CASES))  # env:algo, or env:algo@N (N native envs)
    extra: list[str] = field(default_factory=list)  # train.py overrides for every case, e.g. [algo.batch_size=64]
    baseline: str = ""  # a commit to measure against in the same run (a temporary git worktree)
    baseline_extra: list[str] = field(default_factory=list)  # overrides for the baseline tree only
    new_extra: list[str] = field(default_factory=list)  # overrides for this checkout only, e.g. [env.algo_overrides={}]
    label: str = ""  # names this measurement in the results file (rows of another label are kept)
    warmup: int = 1500  # env steps learned before timing (fills the replay buffer past learning_starts)
    measure: int = 1500  # env steps timed
    random_seconds: float = 2.0  # seconds of the random policy, per measurement
    rounds: int = 2  # alternations old/new; the median rate is reported
    rollouts: int = 3  # on-policy learners (PPO): at least this many whole rollouts timed (warmup: whole rollouts)
    quality: bool = False  # also run train.py to the end at both commits (final reward, wall time)
    seeds: list[int] = field(default_factory=lambda: [0, 1])  # quality runs' training seeds
    steps: int = 0  # quality runs' env steps (0: the algo's default budget)
    write: bool = True  # write rows to outputs/benchmarks/performance.csv
    publish: bool = False  # true: write the checked-in results/benchmarks/performance.csv and docs/performance.md

    def __post_init__(self) -> None:
        for case in self.cases:
            env, algo, n_envs = parse_case(case)
            if is_custom(algo) and algo != "corais":
                raise ValueError(f"cases entry {case!r} is invalid: of the custom trainers only corais has a timed "
                                 "training step (agents.corais.trainer.reinforce_step); the others have their own "
                                 "benchmarks (benchmarks.oinc_prior_speed)")
            if is_custom(algo) and (n_envs or self.baseline):
                raise ValueError(f"cases entry {case!r} is invalid with baseline={self.baseline!r}: a custom trainer is "
                                 "measured alone, without @N and without baseline=")
        if self.rollouts < 1:
            raise ValueError(f"rollouts={self.rollouts} is invalid: expected an integer >= 1")
        if self.warmup < 1 or self.measure < 1 or self.rounds < 1 or self.random_seconds <= 0 or self.steps < 0:
            raise ValueError(f"warmup={self.warmup}, measure={self.measure}, rounds={self.rounds}, "
                             f"random_seconds={self.random_seconds}, steps={self.steps}: expected warmup, measure, "
                             "rounds >= 1, random_seconds > 0, steps >= 0")


def parse_case(case: str) -> tuple[str, str, int]:
    """``env:algo`` → (env, algo, 0); ``env:algo@N`` → (env, algo, N): N envs of the env's native batched VectorEnv
    (``n_envs=N vec_env=native``). Raises ValueError naming the expected form."""
    env, sep, rest = case.partition(":")
    algo, at, count = rest.partition("@")
    if not sep or not env or not algo or ":" in rest or (at and not (count.isdigit() and int(count) >= 1)):
        raise ValueError(f"cases entry {case!r} is invalid: expected <env config>:<algo> or <env config>:<algo>@<n_envs>, "
                         "e.g. uec-v0:sac or uec-v0:ppo_mask@64")
    return env, algo, int(count) if at else 0


def case_extra(n_envs: int) -> list[str]:
    """train.py overrides of a case: ``n_envs=N vec_env=native`` for ``@N``."""
    return [f"n_envs={n_envs}", "vec_env=native"] if n_envs else []


def measure_once(tree: Path, env: str, algo: str, extra: list[str], args: Options, n_envs: int = 0) -> dict:
    """One worker process in ``tree``: training and random env-steps/s (``n_envs`` > 0: the native vector env)."""
    payload = json.dumps({"env": env, "algo": algo, "extra": [*extra, *case_extra(n_envs)], "warmup": args.warmup,
                          "measure": args.measure, "random_seconds": args.random_seconds, "n_envs": n_envs,
                          "rollouts": args.rollouts})
    proc = subprocess.run([sys.executable, "-c", WORKER, payload], cwd=tree, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tree)})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"measurement {env}:{algo} in {tree} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def quality_run(tree: Path, env: str, algo: str, extra: list[str], seed: int, steps: int, out: Path) -> dict:
    """``python train.py`` in ``tree``: wall time and the last in-training evaluation (mean reward, ratio)."""
    import csv
    import time

    command = [sys.executable, "train.py", f"env={env}", f"algo={algo}", f"seed={seed}", f"out={out}",
               "progress=false", *extra, *([f"steps={steps}"] if steps else [])]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=tree, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} in {tree} failed:\n{proc.stderr[-3000:]}")
    run_dir = Path(next(line.split(":", 1)[1].strip() for line in proc.stdout.splitlines()
                        if line.startswith("run folder:")))
    if not run_dir.is_absolute():
        run_dir = tree / run_dir
    with (run_dir / "eval.csv").open() as f:
        last = list(csv.DictReader(f))[-1]
    return {"wall": wall, "mean_reward": float(last["mean_reward"]),
            "ratio": float(last["ratio_to_reference"]) if last.get("ratio_to_reference") else float("nan")}


def is_custom(algo: str) -> bool:
    """Whether ``algo`` is a contract-5 trainer of its own (not an SB3 learner)."""
    from agents.registry import ALGOS

    return algo in ALGOS and ALGOS[algo].kind == "custom"


def batched_speedups(cases: Sequence[str], rates: dict[str, float]) -> list[dict]:
    """Each ``env:algo@N`` case and each custom trainer's case against the first plain SB3 ``env:<algo>`` case of the
    same env (one env at a time, the env's SB3 learner of today): printed and returned as rows."""
    rows = []
    for case in cases:
        env, algo, n_envs = parse_case(case)
        single = next((c for c in cases if parse_case(c)[0] == env and not parse_case(c)[2]
                       and not is_custom(parse_case(c)[1])), None)
        if not (n_envs or is_custom(algo)) or single is None or case not in rates or single not in rates:
            continue
        ratio = rates[case] / rates[single]
        print(f"{case:22s} {rates[case]:9.1f} env-steps/s vs {single} {rates[single]:8.1f}: {ratio:.2f}x")
        rows.append({"quantity": f"{case} training env-steps/s vs {single}", "value": ratio, "unit": "x",
                     "ratio_to": single, "ratio": ratio})
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    trees: dict[str, Path] = {"new": ROOT}
    worktree = None
    if args.baseline:
        worktree = Path(tempfile.mkdtemp(prefix="speed-baseline-"))
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), args.baseline], cwd=ROOT, check=True,
                       capture_output=True)
        trees = {"old": worktree, "new": ROOT}
    rows: list[dict] = []
    new_rates: dict[str, float] = {}  # case -> this checkout's training env-steps/s (the batched-vs-single rows)
    try:
        for case in args.cases:
            env, algo, n_envs = parse_case(case)
            rates: dict[str, list[dict]] = {label: [] for label in trees}
            for _ in range(args.rounds):
                for label, tree in trees.items():
                    extra = [*args.extra, *(args.baseline_extra if label == "old" else args.new_extra)]
                    rates[label].append(measure_once(tree, env, algo, extra, args, n_envs))
            summary = {label: {key: statistics.median(r[key] for r in results)
                               for key in ("train_rate", "train_cpu_rate", "random_rate")}
                       for label, results in rates.items()}
            new_rates[case] = summary["new"]["train_rate"]
            for label, s in summary.items():
                first = rates[label][0]
                if first.get("samples"):
                    schedule = f"REINFORCE, {first['samples']} scored samples per instance"
                elif first.get("n_steps") not in (None, "") and not first.get("train_freq"):
                    schedule = (f"n_steps {first['n_steps']} x {n_envs or 1} envs, batch_size {first['batch_size']}, "
                                f"n_epochs {first['n_epochs']}")
                else:
                    schedule = f"train_freq {first['train_freq']}, gradient_steps {first['gradient_steps']}"
                print(f"{case:16s} {label:3s}  training {s['train_rate']:8.1f} env-steps/s "
                      f"(CPU {s['train_cpu_rate']:8.1f})   random policy {s['random_rate']:9.1f} env-steps/s   "
                      f"learner/random {s['train_rate'] / s['random_rate']:.4f}   [{schedule}]")
                rows.append({"quantity": f"{case} training env-steps/s ({label} code)", "value": s["train_rate"],
                             "unit": "env-steps/s", "ratio_to": "random policy",
                             "ratio": s["train_rate"] / s["random_rate"]})
            if "old" in summary:
                speedup = summary["new"]["train_rate"] / summary["old"]["train_rate"]
                print(f"{case:16s} new/old training env-steps/s: {speedup:.2f}x")
                rows.append({"quantity": f"{case} training env-steps/s, new vs {args.baseline}", "value": speedup,
                             "unit": "x", "ratio_to": f"commit {args.baseline}", "ratio": speedup})
            if args.quality:
                with tempfile.TemporaryDirectory(prefix="speed-quality-") as out:
                    for seed in args.seeds:
                        for label, tree in trees.items():
                            extra = [*args.extra, *(args.baseline_extra if label == "old" else args.new_extra)]
                            q = quality_run(tree, env, algo, [*extra, *case_extra(n_envs)], seed, args.steps,
                                            Path(out) / label)
                            print(f"{case:16s} {label:3s} seed {seed}: train.py wall {q['wall']:7.1f} s, final "
                                  f"mean reward {q['mean_reward']:.4f}, ratio to reference {q['ratio']:.4f}")
                            rows.append({"quantity": f"{case} seed {seed} train.py wall ({label} code)",
                                         "value": q["wall"], "unit": "s"})
                            rows.append({"quantity": f"{case} seed {seed} final mean reward ({label} code)",
                                         "value": q["mean_reward"], "unit": "reward", "ratio_to": "reference policy",
                                         "ratio": q["ratio"]})
        rows += batched_speedups(args.cases, new_rates)
    finally:
        if worktree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
            shutil.rmtree(worktree, ignore_errors=True)
    if args.write:
        from benchmarks.results import write_rows

        write_rows("training_speed" + (f" ({args.label})" if args.label else ""), rows, publish=args.publish)


if __name__ == "__main__":
    main()
