"""Make a small inspect_ai eval log of an agent that calls tools, with the offline mock model."""
from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message, use_tools
from inspect_ai.tool import tool


@tool
def get_weather():
    async def execute(city: str, unit: str = "celsius"):
        """Current weather in a city.

        Args:
            city: The city.
            unit: celsius or fahrenheit.
        """
        return {"Paris": "18 C, cloudy", "Oslo": "9 C, rain"}.get(city, "unknown city")

    return execute


SAMPLES = [
    Sample(id="paris", input="What is the weather in Paris?", target="18"),
    Sample(id="oslo-paris", input="Is it warmer in Oslo or in Paris?", target="Paris"),
    Sample(id="hello", input="Hello!", target="hello"),
]


def usage(output):
    # Usage given up front: otherwise the mock model counts tokens with tiktoken (a download).
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return output


OUTPUTS = [
    usage(ModelOutput.for_tool_call("mockllm/model", "get_weather", {"city": "Paris"})),
    usage(ModelOutput.from_content("mockllm/model", "It is 18 C and cloudy in Paris.")),
    usage(ModelOutput.for_tool_call("mockllm/model", "get_weather", {"city": "Oslo", "unit": "celsius"})),
    usage(ModelOutput.for_tool_call("mockllm/model", "get_weather", {"city": "Paris", "unit": "celsius"})),
    usage(ModelOutput.from_content("mockllm/model", "Paris is warmer: 18 C against 9 C.")),
    usage(ModelOutput.from_content("mockllm/model", "Hello! How can I help?")),
]


@task
def tiny_agent():
    return Task(dataset=SAMPLES, solver=[system_message("You are a weather assistant."),
                                         use_tools(get_weather()), generate()],
                scorer=includes())


if __name__ == "__main__":
    for fmt in ("eval", "json"):
        model = get_model("mockllm/model", custom_outputs=list(OUTPUTS))
        eval(tiny_agent(), model=model, log_dir=f"logs-{fmt}", log_format=fmt, max_samples=1, display="none")
