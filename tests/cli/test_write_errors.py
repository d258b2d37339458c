"""An ``OSError`` of the file system that a library raised while writing (a full disk, a
file-size limit, a read-only file system, a permission) reaches the user as one line naming the file, exit 2."""

from __future__ import annotations

import errno
import os

import pytest
import typer

from ragtruth_spans.cli.common import user_errors


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG, errno.EROFS, errno.EACCES])
def test_a_file_system_failure_is_one_line_naming_the_file(capsys, code: int) -> None:
    with pytest.raises(typer.Exit) as exit_info, user_errors():
        raise OSError(code, os.strerror(code), "/runs/r/checkpoint-2/model.safetensors")
    assert exit_info.value.exit_code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"error: /runs/r/checkpoint-2/model.safetensors: {os.strerror(code)}"]


def test_other_os_errors_are_not_disguised() -> None:
    with pytest.raises(ConnectionResetError), user_errors():
        raise ConnectionResetError(errno.ECONNRESET, "reset")
