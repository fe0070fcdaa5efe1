"""An RMTable file as the rmtable package reads and verifies it, for the tests' scripts."""
import contextlib
import io


def read_and_verify(path):
    """The table at `path` (FITS, or CSV by its name) and what is wrong with it: standard
    columns missing, or what verify_limits and verify_standard_strings report."""
    from rmtable import RMTable
    # astropy masks empty CSV fields, and reads a column of empty strings (the standard's
    # blank of `type`) as masked integers, unless told to keep them.
    options = {"format": "csv", "fill_values": []} if path.endswith(".csv") else {"format": "fits"}
    table = RMTable.read(path, **options)
    problems = [f"missing {c}" for c in table.standard_columns if c not in table.colnames]
    if len(table.standard_columns) != 58:
        problems.append(f"{len(table.standard_columns)} standard columns, not 58")
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        table.verify_limits()
        table.verify_standard_strings()
    if not ("All columns conform with standard." in said.getvalue()
            and "No problems found with standardized string entries." in said.getvalue()):
        problems.append(said.getvalue().strip())
    return table, problems
