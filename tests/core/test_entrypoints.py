"""Plugin discovery reads entry points itself; it must agree with importlib.metadata."""

from __future__ import annotations

import sys
import zipfile
from importlib.metadata import entry_points as metadata_entry_points

from evalyard.entrypoints import entry_points


def _dist(root, dirname: str, name: str, version: str, entry_points_txt: str | None) -> None:
    directory = root / dirname
    directory.mkdir()
    (directory / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n"
                                        "Name: not-a-header (the body starts after the blank line)\n")
    if entry_points_txt is not None:
        (directory / "entry_points.txt").write_text(entry_points_txt)


def test_agrees_with_importlib_metadata_on_this_environment():
    ours = {(e.name, e.value, e.dist_name, e.dist_version) for e in entry_points("evalyard")}
    theirs = {(e.name, e.value, e.dist.metadata["Name"], e.dist.version)
              for e in metadata_entry_points(group="evalyard")}
    assert ours == theirs
    assert any(name == "sandbox" for name, *_ in ours)  # the plugins of this checkout are installed


def test_reads_groups_dedupes_distributions_and_loads(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    _dist(first, "my_plugin-1.2.dist-info", "My-Plugin", "1.2",
          "# comment\n[console_scripts]\nmy = my_plugin:main\n\n[evalyard]\n# another comment\n"
          "mine = json:dumps\nother = os.path [extra]\n")
    _dist(first, "no_entry_points-1.0.dist-info", "no-entry-points", "1.0", None)
    _dist(second, "My.Plugin-9.9.dist-info", "My.Plugin", "9.9", "[evalyard]\nshadowed = json:loads\n")
    _dist(second, "legacy.egg-info", "legacy", "0.3", "[evalyard]\nlegacy = json\n")
    found = entry_points("evalyard", [str(first), str(second), str(tmp_path / "missing")])
    assert [(e.name, e.value, e.dist_name, e.dist_version) for e in found] == [
        ("mine", "json:dumps", "My-Plugin", "1.2"),
        ("other", "os.path [extra]", "My-Plugin", "1.2"),
        ("legacy", "json", "legacy", "0.3"),
    ]
    import json
    import os

    assert found[0].load() is json.dumps
    assert found[1].load() is os.path
    # importlib.metadata, over the same path, finds the same entry points
    monkeypatch.setattr(sys, "path", [str(first), str(second)])
    theirs = {(e.name, e.value, e.dist.version) for e in metadata_entry_points(group="evalyard")}
    assert theirs == {(e.name, e.value, e.dist_version) for e in found}


def test_a_zip_on_the_path_is_read_through_importlib_metadata(tmp_path):
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("zipped_plugin-2.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped-plugin\nVersion: 2.0\n")
        handle.writestr("zipped_plugin-2.0.dist-info/entry_points.txt", "[evalyard]\nzipped = json:dumps\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    _dist(plain, "zipped_plugin-1.0.dist-info", "zipped-plugin", "1.0", "[evalyard]\nshadowed = json\n")
    found = entry_points("evalyard", [str(archive), str(plain)])
    assert [(e.name, e.value, e.dist_name, e.dist_version) for e in found] == [
        ("zipped", "json:dumps", "zipped-plugin", "2.0")]
    import json

    assert found[0].load() is json.dumps
