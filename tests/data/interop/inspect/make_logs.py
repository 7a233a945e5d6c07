"""Make small inspect_ai eval logs with the offline mock model (no network)."""
from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes, match

SAMPLES = [
    Sample(id="capital-fr", input="What is the capital of France?", target="Paris",
           metadata={"topic": "geography"}),
    Sample(id="add", input="What is 2 + 2? Answer with a number.", target="4", metadata={"topic": "math"}),
    Sample(id=3, input=[ChatMessageSystem(content="Answer in one word."),
                        ChatMessageUser(content="Which planet is known as the red planet?")],
           target=["Mars", "mars"], metadata={"topic": "astronomy"}),
]
# The mock model answers these in order: two epochs x three samples.
ANSWERS = ["Paris", "5", "Mars", "Paris.", "4", "It is Mars"]


def answer(text):
    # Usage given up front: otherwise the mock model counts tokens with tiktoken, which downloads
    # its encoding on first use (no network here).
    output = ModelOutput.from_content("mockllm/model", text)
    output.usage = ModelUsage(input_tokens=10, output_tokens=len(text.split()), total_tokens=10 + len(text.split()))
    return output


@task
def tiny_qa():
    return Task(dataset=SAMPLES, scorer=[match(), includes()], epochs=2)


if __name__ == "__main__":
    for fmt in ("eval", "json"):
        model = get_model("mockllm/model", custom_outputs=[answer(a) for a in ANSWERS])
        eval(tiny_qa(), model=model, log_dir=f"logs-{fmt}", log_format=fmt, max_samples=1, display="none")
