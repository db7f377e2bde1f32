"""PufferLib's C Snake for the arena part (`bench/peers/pufferlib_snake.py`): snake.h is found at
$JAXRL_PUFFERLIB_SNAKE or in the cache before anything is downloaded; the sdist's link comes from the simple
index, an archive of another checksum is refused in one line and leaves nothing behind; offline, the arena
part says so and goes on; a record names its source, never a path. The download, build and timing of the
real thing is a slow test (network and a C compiler)."""

import hashlib
import io
import json
import shutil
import tarfile
import urllib.error

import pytest

from jaxrl.bench.common import Context
from jaxrl.bench.parts import arena
from jaxrl.bench.peers import pufferlib_snake as puffer

FAKE_HEADER = b"/* not PufferLib's */\n"


@pytest.fixture
def no_source(tmp_path, monkeypatch):
    """An empty cache, no $JAXRL_PUFFERLIB_SNAKE, and a network that answers nothing."""

    def offline(url, timeout=None):
        raise urllib.error.URLError("no network in tests")

    monkeypatch.delenv(puffer.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(puffer.urllib.request, "urlopen", offline)
    return tmp_path


def sdist(member: str = puffer.MEMBER, data: bytes = FAKE_HEADER) -> bytes:
    """A tiny gzipped tar holding `data` at `member`, beside another file."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in ((f"pufferlib-{puffer.VERSION}/README.md", b"readme"), (member, data)):
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


class Answer(io.BytesIO):
    """What urlopen gives: the simple page at an index URL, else the archive."""

    def __init__(self, url: str, page: bytes, archive: bytes) -> None:
        self.url = url
        super().__init__(page if url.endswith("/pufferlib/") else archive)

    def geturl(self) -> str:
        return self.url


def test_snake_h_is_found_at_the_env_var_as_a_folder_or_the_file(no_source, monkeypatch):
    folder = no_source / "puffer"
    folder.mkdir()
    (folder / "snake.h").write_bytes(FAKE_HEADER)
    for given in (folder, folder / "snake.h"):
        monkeypatch.setenv(puffer.ENV_VAR, str(given))
        assert puffer.find() == puffer.Source(folder / "snake.h", "$JAXRL_PUFFERLIB_SNAKE")
    monkeypatch.setenv(puffer.ENV_VAR, str(no_source / "nowhere"))  # named but empty: an error, no download
    with pytest.raises(puffer.Unavailable, match=r"^\$JAXRL_PUFFERLIB_SNAKE names neither snake.h") as e:
        puffer.find()
    assert str(no_source) not in str(e.value)


def test_the_cache_is_read_before_anything_is_downloaded(no_source):
    assert puffer.cache_dir() == no_source / "cache" / "jaxrl" / "pufferlib-3.0.0"
    with pytest.raises(puffer.Unavailable, match="downloads nothing"):
        puffer.find(download=False)
    puffer.cache_dir().mkdir(parents=True)
    (puffer.cache_dir() / "snake.h").write_bytes(FAKE_HEADER)
    assert puffer.find() == puffer.Source(puffer.cache_dir() / "snake.h", puffer.PYPI_LABEL)


def test_the_sdists_link_is_read_from_the_simple_index_and_its_listed_checksum_checked():
    base = "https://index.example/simple/pufferlib/"
    page = (
        '<a href="../../packages/pufferlib-2.0.6.tar.gz#sha256=00">pufferlib-2.0.6.tar.gz</a>'
        f'<a href="../../packages/ab/{puffer.SDIST}#sha256={puffer.SHA256}">{puffer.SDIST}</a>'
    )
    assert puffer.sdist_url(page, base) == f"https://index.example/packages/ab/{puffer.SDIST}"
    with pytest.raises(puffer.Unavailable, match="not the pinned 7df3a3e3"):
        puffer.sdist_url(page.replace(puffer.SHA256, "f" * 64), base)
    with pytest.raises(puffer.Unavailable, match="lists no pufferlib-3.0.0.tar.gz"):
        puffer.sdist_url(page.replace(puffer.SDIST, "pufferlib-3.0.1.tar.gz"), base)


def test_an_archive_of_another_checksum_is_refused_in_one_line_and_nothing_is_kept(tmp_path, monkeypatch):
    archive = sdist()
    page = f'<a href="files/{puffer.SDIST}">{puffer.SDIST}</a>'.encode()
    monkeypatch.setattr(puffer.urllib.request, "urlopen", lambda url, timeout=None: Answer(url, page, archive))
    folder = tmp_path / "cache"
    with pytest.raises(puffer.Unavailable) as e:
        puffer.fetch(folder, index="https://index.example/simple")
    assert "\n" not in str(e.value) and str(e.value).endswith("not the pinned 7df3a3e3…: refused")
    assert not folder.exists() or not any(folder.iterdir())
    monkeypatch.setattr(puffer, "SHA256", hashlib.sha256(archive).hexdigest())  # the same archive, pinned
    assert puffer.fetch(folder, index="https://index.example/simple").read_bytes() == FAKE_HEADER
    assert sorted(p.name for p in folder.iterdir()) == ["snake.h"]  # the header alone, no temporary left
    other = sdist(member="pufferlib-3.0.0/other.h")
    monkeypatch.setattr(puffer, "SHA256", hashlib.sha256(other).hexdigest())
    with pytest.raises(puffer.Unavailable, match="holds no pufferlib-3.0.0/pufferlib/ocean/snake/snake.h"):
        puffer.header_from_archive(io.BytesIO(other))


def test_offline_the_arena_part_says_so_in_one_line_and_goes_on(no_source, capsys):
    ctx = Context(mode="quick", out=no_source, machine={"cores": 2, "platform": "cpu"})
    out = arena.pufferlib_speed(ctx)
    assert out["pufferlib_c"] is None and ctx.notes == [out["pufferlib_missing"]]
    assert out["pufferlib_missing"].startswith("PufferLib source not available (pufferlib-3.0.0.tar.gz could not be")
    assert "no network in tests" in out["pufferlib_missing"] and "\n" not in out["pufferlib_missing"]
    assert "skipped: PufferLib source not available" in capsys.readouterr().out
    smoke = Context(mode="smoke", out=no_source, machine={"cores": 2, "platform": "cpu"})
    assert "this run downloads nothing" in arena.pufferlib_speed(smoke)["pufferlib_missing"]


def test_a_record_names_its_source_by_label_never_by_path(no_source, monkeypatch):
    folder = no_source / "puffer"
    folder.mkdir()
    (folder / "snake.h").write_bytes(FAKE_HEADER)
    monkeypatch.setenv(puffer.ENV_VAR, str(folder))
    monkeypatch.setattr(puffer, "build", lambda source: no_source / "snake_bench")
    line = "PufferLib C Snake, 16 worlds of 640x360 with 256 snakes each: 5274596 snake-steps/s (1288 steps: 1 s)"
    monkeypatch.setattr(puffer, "one_round", lambda binary, processes, seconds: [puffer.rate(line)] * processes)
    record = puffer.measure(processes=2, seconds=0.1, rounds=2)
    assert record["source"] == "$JAXRL_PUFFERLIB_SNAKE" and record["snake_sps"] == 2 * 5274596
    assert record["rounds"] == [2 * 5274596] * 2 and record["per_process"] == [5274596] * 2
    assert str(no_source) not in json.dumps(record) and "/tmp" not in json.dumps(record)
    assert puffer.PYPI_LABEL == "pypi:pufferlib==3.0.0 (sha256 7df3a3e3…)"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_pufferlibs_c_snake_downloads_builds_and_steps(monkeypatch):
    """The real thing, in the user's cache (downloaded there once): its figure and a record free of paths."""
    monkeypatch.delenv(puffer.ENV_VAR, raising=False)
    try:
        record = puffer.measure(processes=1, seconds=0.2, rounds=1)
    except puffer.Unavailable as e:
        if "could not be downloaded" not in str(e):
            raise
        pytest.skip(str(e))  # offline
    assert record["snake_sps"] > 0 and record["source"] == puffer.PYPI_LABEL
    text = json.dumps(record)
    assert not any(root in text for root in ("/work", "/home", "/tmp", "/root", str(puffer.cache_dir())))
