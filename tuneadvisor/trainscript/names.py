"""What names mean in a training script: the one table of name heuristics.

Line kinds (``roles``, ``kinds``) and the script scan (``scan_*``) both ask this module whether
a name is a DataLoader, a model, a loss function, an optimizer, a training or an evaluation
thing, so the profile's line kinds and the script's facts never disagree about a name. Names
are matched, not types inferred: see ``kinds``' docstring for how roles also flow through
bindings.
"""

from __future__ import annotations

import re

# --- DataLoaders ----------------------------------------------------------------------------

# `*loader`, `*loaders`, `*prefetcher(s)`, `dl`, `dls`, `*_dl`, `*_dls`, each optionally followed
# by a letter, a number or a split: `train_loader`, `TrainLoader`, `loader2`, `dl_val`,
# `loader_train`, `loader_training`, `loader_src`, `loader_unlabeled`. A name that merely
# contains "loader", such as `loader_kwargs`, is not one. The same test names callees that
# build loaders (`DataLoader`, `get_loader`, `fabric.setup_dataloaders`).
_LOADER_NAME = re.compile(
    r"(?:loaders?|prefetchers?|(?:^|_)dls?)"
    r"(?:_?(?:[a-z]|[0-9]+|train|training|val|valid|validation|test|eval|src|tgt|source|target|un)?"
    r"(?:labell?ed)?)?$",
    re.IGNORECASE,
)
# `next()` also accepts iterator names (`it`, `data_iter`, `*_iterator`): a training loop
# rarely `next()`-s anything else.
_ITER_NAME = re.compile(r"(?:^|_)(?:data_?)?(?:it|iter|iterator)$", re.IGNORECASE)
# Calls that wrap a DataLoader and still yield its batches, for line kinds; the scan looks
# through its own, older list to find the loader a loop iterates (`trange`, no `cycle` or
# `chain`). Kept apart on purpose: merging them would change which loops the scan counts.
LOADER_WRAPPERS = frozenset(
    {"enumerate", "zip", "iter", "tqdm", "cycle", "islice", "chain", "from_iterable", "track"}
)
LOOP_WRAPPERS = frozenset({"enumerate", "tqdm", "trange", "zip", "iter", "islice", "track"})


def is_loader_name(name: str) -> bool:
    """A DataLoader by its name (or a callee that builds one by its name)."""
    return _LOADER_NAME.search(name) is not None


def is_iterator_name(name: str) -> bool:
    """``it``, ``data_iter``, ``train_iterator``: what ``next()`` is called on."""
    return _ITER_NAME.search(name) is not None


# --- models -------------------------------------------------------------------------------

# A model's name: lowercase words joined by "_", the last one model/net/network with an
# optional suffix (``ema_model``, ``netG``, ``net_D2``); ``resnet``/``mymodel``; model_engine.
# Tried from each word's start (a pattern over the words before it backtracked).
_MODEL_WORD = re.compile(r"(?:model|net|network)(?:_?[A-Z0-9][A-Za-z0-9]*)?")
_LOWER_WORDS = re.compile(r"[a-z0-9_]*")
_VERB_PREFIX = re.compile(
    r"^(?:build|create|get|load|make|init|initialize|save|setup|prepare|wrap|unwrap|freeze|"
    r"train|eval|evaluate|test|validate|export|print|log|compile|copy|run|summarize|count|"
    r"fit|define|construct|plot|show|record|update|write|track|report|append|reset|add)_",
    re.IGNORECASE,
)
MODULE_BASES = frozenset({"Module", "LightningModule", "PreTrainedModel"})
# What wraps a model for data-parallel training (the scan's `script.ddp`).
DDP_WRAPPERS = frozenset({"DistributedDataParallel", "FullyShardedDataParallel", "DDP", "FSDP"})
MODEL_WRAPPERS = DDP_WRAPPERS | {"DataParallel", "create_model"}


def is_model_name(name: str) -> bool:
    """``model``, ``net``, ``netG``, ``ema_model``; not ``build_model``."""
    return _model_name(name) and not _VERB_PREFIX.match(name)


def is_model_factory(name: str) -> bool:
    """``build_model``, ``get_model``, ``load_model``: a verb, then a model name."""
    verb = _VERB_PREFIX.match(name)
    return verb is not None and _model_name(name[verb.end() :])


def _model_name(name: str) -> bool:
    if name == "model_engine":
        return True
    lower = _LOWER_WORDS.match(name)
    words_end = lower.end() if lower is not None else 0
    if words_end == len(name) and "_" not in name and name.endswith(("model", "net")):
        return True  # resnet, mymodel
    starts = [0, *(at + 1 for at in range(words_end) if name[at] == "_")]
    return any(_MODEL_WORD.fullmatch(name, start) is not None for start in starts)


def names_a_model_class(parts: list[str]) -> bool:
    """``AutoModelForX.from_pretrained``: the owner of the call names a model class."""
    owner = parts[-2] if len(parts) >= 2 else ""
    return "Model" in owner or "For" in owner


# --- loss functions -------------------------------------------------------------------------

_LOSS_FN_NAME = re.compile(r"criterion|^loss_?f(?:n|unc|unction)$|_loss_?fn$", re.IGNORECASE)
FUNCTIONAL_LOSSES = frozenset(
    {"cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"}
)


def is_loss_fn_name(name: str) -> bool:
    """``criterion``, ``loss_fn``, ``train_criterion``."""
    return _LOSS_FN_NAME.search(name) is not None


def is_loss_call_name(name: str) -> bool:
    """A lower-case callee that computes a loss: ``criterion``, ``F.nll_loss``, ``loss_fn``."""
    if not name or name[0].isupper() or _VERB_PREFIX.match(name):
        return False
    lower = name.lower()
    return "loss" in lower or "criterion" in lower or lower in FUNCTIONAL_LOSSES


# --- tensors ------------------------------------------------------------------------------

_TORCH_FUNCTION_MODULES = frozenset({"torch", "F", "torch.nn.functional", "functional"})
_TORCH_NON_TENSOR = frozenset(
    {
        "device",
        "dtype",
        "manual_seed",
        "seed",
        "no_grad",
        "enable_grad",
        "inference_mode",
        "set_grad_enabled",
        "autocast",
        "is_tensor",
        "is_floating_point",
        "numel",
        "save",
        "load",
        "set_num_threads",
        "get_num_threads",
        "set_default_dtype",
        "get_default_dtype",
        "set_float32_matmul_precision",
        "use_deterministic_algorithms",
        "finfo",
        "iinfo",
    }
)


def returns_tensor(module: str | None, name: str) -> bool:
    """``torch.cat``, ``F.softmax``: functions that return tensors (not ``torch.device``)."""
    if name in _TORCH_NON_TENSOR:
        return False
    return name[:1].islower() and module in _TORCH_FUNCTION_MODULES


# --- optimizers, schedulers, GradScalers ------------------------------------------------------

_OPTIM_NAME = re.compile(r"optimi[sz]er|sched", re.IGNORECASE)
_OPT_SHORT_NAME = re.compile(r"^opt(?:$|_|[A-Z0-9])|_opt$|^optim$")
_SCALER_NAME = re.compile(r"scaler$", re.IGNORECASE)
OPTIMIZER_CLASSES = frozenset(
    {
        "SGD",
        "Adam",
        "AdamW",
        "Adadelta",
        "Adagrad",
        "Adamax",
        "ASGD",
        "LBFGS",
        "NAdam",
        "RAdam",
        "RMSprop",
        "Rprop",
        "SparseAdam",
        "Lion",
        "LAMB",
        "Lamb",
        "Adafactor",
        "FusedAdam",
        "FusedLAMB",
    }
)


def is_optimizer_name(name: str) -> bool:
    """``optimizer``, ``opt``, ``opt_d``, ``g_opt``, ``lr_scheduler``."""
    return _OPTIM_NAME.search(name) is not None or _OPT_SHORT_NAME.search(name) is not None


def is_scaler_name(name: str) -> bool:
    return _SCALER_NAME.search(name) is not None


def is_optimizer_constructor(name: str, parts: list[str]) -> bool:
    """``SGD``, ``optim.Adam``, ``StepLR``, ``get_cosine_schedule_with_warmup``."""
    lower = name.lower()
    return (
        name in OPTIMIZER_CLASSES
        or "optimi" in lower
        or "schedul" in lower
        or name.endswith("LR")
        or name == "ReduceLROnPlateau"
        or ("optim" in parts[:-1] and name[:1].isupper())
    )


# --- training and evaluation; ranks and process counts (the scan) -----------------------------

_EVAL_NAME = re.compile(r"val|test|eval", re.IGNORECASE)
WORLD_SIZE_NAMES = frozenset({"world_size"})
RANK_NAMES = frozenset({"rank", "global_rank", "world_rank"})
LOCAL_RANK_NAMES = frozenset({"local_rank"})
NPROC_NAMES = frozenset(
    {"nprocs", "nproc", "nproc_per_node", "ngpus_per_node", "ngpus", "n_gpus", "num_gpus"}
)


def is_train_name(name: str) -> bool:
    """``train_loader``, ``train_one_epoch``: named for training."""
    return "train" in name.lower()


def is_eval_name(name: str) -> bool:
    """``val_loader``, ``test_dl``, ``evaluate``: named for evaluation."""
    return _EVAL_NAME.search(name) is not None
