"""Admin commands that talk to a running broker over the Kafka wire protocol."""
