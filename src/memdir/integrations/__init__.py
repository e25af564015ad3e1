"""memdir inside the frameworks agent developers already use, one module each (its
package installed separately, as an extra): ``memdir.integrations.langgraph``
(a LangGraph ``BaseStore``), ``.langchain`` and ``.openai_agents`` (memdir's tools
as LangChain and OpenAI Agents SDK tools). The agent SDK examples are in ``examples/``."""
