"""File tools for LangChain and LangGraph agents."""
