// Search inside a conversation.
