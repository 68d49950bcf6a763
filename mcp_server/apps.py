from django.apps import AppConfig


class McpServerConfig(AppConfig):
    name = "mcp_server"
