"""The one reader of every command-line input (convexmetric/cli/reader.py), as a unit."""

from __future__ import annotations

import numpy as np
import pytest

from convexmetric.cli.reader import read_table


def write(tmp_path, text, name="f.csv"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


def test_header_is_detected_only_when_every_cell_of_row_1_is_non_numeric(tmp_path):
    t = read_table(write(tmp_path, "a,b\n1,2\n3,4\n"), "features")
    assert t.header == ["a", "b"] and t.n_rows == 2 and t.first_row == 2
    t = read_table(write(tmp_path, "1,2\n3,4\n"), "features")
    assert t.header is None and t.n_rows == 2
    np.testing.assert_array_equal(t.floats(), [[1, 2], [3, 4]])
    # one numeric cell: data, not a header, so its non-number is an error at row 1
    with pytest.raises(ValueError, match=r"'f.csv', row 1, column 1: 'x' is not a number"):
        read_table(write(tmp_path, "x,2\n3,4\n"), "features").floats()


@pytest.mark.parametrize("cell", ["NA", "", "nan", "NaN", "?"])
def test_missing_cell_in_row_1_of_a_headerless_file_is_an_error_not_a_header(tmp_path, cell):
    text = f"1.5,{cell},3\n" + "".join(f"{i},{i + 1},{i + 2}\n" for i in range(9))
    t = read_table(write(tmp_path, text), "features")
    assert t.header is None and t.n_rows == 10  # every data row counted
    with pytest.raises(ValueError, match=r"'f.csv', row 1, column 2: missing value"):
        t.floats()


def test_explicit_header_and_no_header(tmp_path):
    path = write(tmp_path, "x,y\n1,2\n")
    assert read_table(path, "features", header=True).header == ["x", "y"]
    with pytest.raises(ValueError, match="row 1, column 1: 'x' is not a number"):
        read_table(path, "features", header=False).floats()
    path = write(tmp_path, "1,2\n3,4\n")
    t = read_table(path, "features", header=True)
    assert t.header == ["1", "2"] and t.n_rows == 1


def test_missing_cell_names_file_row_and_column(tmp_path):
    t = read_table(write(tmp_path, "a,b,c\n1,2,3\n4,,6\n"), "features")
    with pytest.raises(ValueError) as exc:
        t.floats()
    msg = str(exc.value)
    assert "features file 'f.csv', row 3, column 2 ('b'): missing value" in msg
    assert "could not convert" not in msg


def test_non_utf8_file_names_the_file(tmp_path):
    path = write(tmp_path, b"a,b\n1,2\n\xff\xfe,3\n", name="latin.csv")
    with pytest.raises(ValueError, match=r"labels file .*latin\.csv' is not UTF-8 text .*row 3"):
        read_table(path, "labels")


def test_utf8_bom_is_accepted(tmp_path):
    t = read_table(write(tmp_path, "\ufeffa,b\n1,2\n".encode()), "features")
    assert t.header == ["a", "b"]


def test_semicolon_file_gives_a_short_message(tmp_path):
    row = ";".join(str(i) for i in range(300))
    path = write(tmp_path, "\n".join([row] * 3) + "\n")
    with pytest.raises(ValueError) as exc:
        read_table(path, "features", header=False)
    msg = str(exc.value)
    assert "semicolons" in msg and "comma-separated" in msg and len(msg) < 200
    # and with a header row of semicolons too
    with pytest.raises(ValueError, match="semicolons"):
        read_table(write(tmp_path, "a;b\n1;2\n"), "features")


def test_ragged_rows_name_the_row(tmp_path):
    with pytest.raises(ValueError, match=r"row 3: 2 columns where row 1 has 3"):
        read_table(write(tmp_path, "1,2,3\n4,5,6\n7,8\n"), "features")


def test_long_cells_are_shortened_in_messages(tmp_path):
    t = read_table(write(tmp_path, "1," + "z" * 1000 + "\n"), "features")
    with pytest.raises(ValueError) as exc:
        t.floats()
    assert len(str(exc.value)) < 200


def test_rows_read_equal_the_data_rows(tmp_path):
    text = "a,b\n" + "".join(f"{i},{i}\n" for i in range(7)) + "\n\n"
    t = read_table(write(tmp_path, text), "features")
    assert t.n_rows == 7 and "read 7 rows × 2 columns" in t.describe()
    # a row of empty cells is a row (with missing values), not a blank line
    t = read_table(write(tmp_path, "1,2\n,\n3,4\n"), "features")
    assert t.n_rows == 3
    with pytest.raises(ValueError, match="row 2, column 1: missing value"):
        t.floats()


def test_empty_and_header_only_files(tmp_path):
    with pytest.raises(ValueError, match="is empty"):
        read_table(write(tmp_path, ""), "features")
    with pytest.raises(ValueError, match="no data rows"):
        read_table(write(tmp_path, "a,b\n"), "features")


def test_labels_keep_their_type(tmp_path):
    y = read_table(write(tmp_path, "label\n0\n1\n1\n"), "labels").labels()
    assert y.dtype == np.int64 and y.tolist() == [0, 1, 1]
    y = read_table(write(tmp_path, "0.5\n1.5\n"), "labels").labels()
    assert y.dtype.kind == "f"
    y = read_table(write(tmp_path, "cat\ndog\ncat\n"), "labels", header=False).labels()
    assert y.dtype.kind == "U" and y.tolist() == ["cat", "dog", "cat"]
    y = read_table(write(tmp_path, "species\ncat\ndog\n"), "labels", header=True).labels()
    assert y.tolist() == ["cat", "dog"]


def test_text_labels_header_is_a_value_that_does_not_recur(tmp_path):
    t = read_table(write(tmp_path, "cat\ndog\ncat\n"), "labels")
    assert t.header is None and t.labels().tolist() == ["cat", "dog", "cat"]
    t = read_table(write(tmp_path, "species\ncat\ndog\ncat\n"), "labels")
    assert t.header == ["species"] and t.n_rows == 3


def test_missing_label_names_its_row(tmp_path):
    with pytest.raises(ValueError, match=r"labels file 'f.csv', row 3, column 1: missing label"):
        read_table(write(tmp_path, "1\n2\nNA\n"), "labels").labels()


def test_labels_with_two_columns_are_refused(tmp_path):
    with pytest.raises(ValueError, match="one column"):
        read_table(write(tmp_path, "1,2\n3,4\n"), "labels").labels()


def test_npy_inputs(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[1.0, np.nan], [2.0, 3.0]]))
    with pytest.raises(ValueError, match=r"'x.npy', row 1, column 2: NaN"):
        read_table(str(tmp_path / "x.npy"), "features").floats()
    np.save(tmp_path / "y.npy", np.array(["a", "b"]))
    assert read_table(str(tmp_path / "y.npy"), "labels").labels().tolist() == ["a", "b"]
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="pickled"):
        read_table(str(tmp_path / "o.npy"), "features")


def test_unsupported_extension(tmp_path):
    with pytest.raises(ValueError, match=r"unsupported extension '.xlsx'"):
        read_table(write(tmp_path, "1\n", name="f.xlsx"), "features")


def test_integer_columns(tmp_path):
    t = read_table(write(tmp_path, "i,j,r\n0,1,1\n2,3.5,-1\n"), "pairs")
    with pytest.raises(ValueError, match=r"row 3, column 2 \('j'\): 3.5 is not an integer"):
        t.integers([0, 1])
