"""The client: sessions opened to servers, and starting them again."""
