"""The MCP door: tools over streamable HTTP (with OAuth) and stdio."""
