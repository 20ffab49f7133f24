"""Acoustic channel and modem simulator for acomms."""
