"""Line kinds of a large file are worked out a group of top-level statements at a time, each
group's tree dropped before the next is parsed (issue 29, point 7: the whole tree of the
50,000-line bench script is ~170 MiB). The answer must be the whole parse's, line for line:
where names flow between groups in a way that could change it, the streamed reading says so
(None) and the whole file is read at once."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.trainscript import kinds
from tuneadvisor.trainscript.kinds import SourceInfo, analyze_source
from tuneadvisor.trainscript.parsed import CHUNKED_FROM_CHARS, parse_script

ROOT = Path(__file__).parents[2]


def _whole(text: str) -> SourceInfo:
    parsed = parse_script(text)
    assert parsed.tree is not None or parsed.error is not None  # parsed whole, first
    return analyze_source(parsed)


def _streamed(text: str, group_lines: int = 1) -> SourceInfo | None:
    return kinds._streamed(parse_script(text), group_lines)


def _every_python_file_here() -> list[Path]:
    folders = ("tests/fixtures", "training", "examples", "bench")
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def test_every_script_here_streamed_is_the_whole_parse_or_refused() -> None:
    answered = 0
    for path in _every_python_file_here():
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        for group_lines in (1, 40):
            got = _streamed(text, group_lines)
            if got is not None:
                answered += 1
                assert got == _whole(text), (path, group_lines)
    assert answered > 20  # most real scripts bind names before they read them


# Top-level pieces whose names flow between groups: module-level names read by functions
# before or after they are bound, attributes set in one method and read in another, classes
# that make a name a model (or a loss) defined after their use, a def named like a model.
PIECES = [
    "import torch\n",
    "model = Net()\n",
    "train_loader = DataLoader(ds)\n",
    "def train(m, loader):\n    for x, y in loader:\n        out = m(x)\n"
    "        crit(out, y).backward()\n",
    "def step():\n    out = model(batch)\n    print(out)\n    out.item()\n",
    "def run():\n    for batch in train_loader:\n        net(batch)\n",
    "class Net(nn.Module):\n    pass\n",
    "class Wrapper(Net):\n    pass\n",
    "class MyLoss(Base):\n    pass\n",
    "net = Wrapper()\n",
    "crit = MyLoss()\n",
    "def model():\n    return 1\n",
    "class T:\n    def __init__(self):\n        self.model = Net()\n"
    "    def fit(self, x):\n        return self.model(x)\n",
    "def fit2(self, x):\n    y = self.model(x)\n    f'{y}'\n",
    "batch = torch.zeros(3).cuda()\n",
    "if __name__ == '__main__':\n    train(model, train_loader)\n    opt = SGD()\n    opt.step()\n",
    "for epoch in range(3):\n    run()\n",
    "x = [\n1,\n]\n",
    "def broken(:\n",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=10), st.sampled_from([1, 3, 8]))
def test_streamed_kinds_are_the_whole_parses_or_refused(
    pieces: list[str], group_lines: int
) -> None:
    text = "".join(pieces)
    got = _streamed(text, group_lines)
    if got is not None:
        assert got == _whole(text)


def test_names_bound_before_they_are_read_are_streamed() -> None:
    text = "".join(PIECES[i] for i in (0, 6, 7, 8, 1, 2, 9, 10, 4, 5, 3, 15))
    got = _streamed(text)
    assert got is not None
    assert got == _whole(text)
    assert set(got.kinds.values()) >= {kinds.LineKind.FORWARD, kinds.LineKind.DATALOADER}


def test_a_name_read_before_a_later_group_binds_it_is_refused() -> None:
    # run() reads the module's `feed` before it is bound: the whole file's rounds decide
    late = "def run():\n    for b in feed:\n        pass\n" + "feed = DataLoader(ds)\n"
    assert _streamed(late) is None
    assert _whole(late).kinds == {2: kinds.LineKind.DATALOADER}
    # a class defined after the call that builds it turns `net` into a model
    assert _streamed(PIECES[9] + PIECES[5] + PIECES[7] + PIECES[6]) is None
    # a def after a read of the name
    assert _streamed(PIECES[4] + PIECES[11]) is None


def _bench_like(functions: int) -> str:
    body = PIECES[3].replace("def train", "def train_{n}")
    return "import torch\n\n" + "".join(body.format(n=n) + "\n" for n in range(functions))


def test_a_large_file_is_never_parsed_whole_for_its_kinds() -> None:
    text = _bench_like(1 + CHUNKED_FROM_CHARS // len(PIECES[3]))
    parsed = parse_script(text)
    got = analyze_source(parsed)
    assert not parsed.is_parsed  # the scan, where it runs, parses it then
    assert got == _whole(text)
    assert len(got.function_ends) > 1000
