"""The web app's pages: sign-in, the overview, and one module per per-agent tab."""
