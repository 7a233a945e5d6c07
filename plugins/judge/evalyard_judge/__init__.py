"""evalyard-judge: prompt-judge scorers built from prompt templates and the model layer.

- Arthur Bench's judges, corrected: ``qa_correctness``, ``summary_quality`` (both orders),
  ``hallucination`` (claims checked one by one);
- the twelve aspects of seed 004 as ``criteria/<aspect>`` (the plugin's second namespace);
- Ragas ``summarization_score``.

``evalyard calibrate`` (agreement of any scorer with human labels) is a core command.
"""

__version__ = "0.1.0"
