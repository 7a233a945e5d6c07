"""evalyard-retrieval: measures of a retriever's ranking against relevance judgements."""
