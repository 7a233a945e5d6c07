"""A plugin that adds an output format in one file: a Markdown table of a run's results."""

from evalyard import hookimpl


def write_markdown(source, target):
    with source.open_text(target) as handle:
        handle.write(f"# run {source.run.id}\n\n| {' | '.join(source.columns[:5])} |\n")
        handle.write("|" + "---|" * 5 + "\n")
        for row in source.rows():
            handle.write("| " + " | ".join("" if cell is None else str(cell) for cell in row[:5]) + " |\n")


@hookimpl
def register_outputs(register):
    register("markdown-table", write_markdown, default_target="evalyard-{run_id}.table.md", stdout=True,
             help="a Markdown table of the results")
